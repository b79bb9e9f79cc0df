"""Inline approvals: each key, mode cycling, and what the model is told (real engine, scripted server)."""

from __future__ import annotations

from pathlib import Path

from dcode.agent.events import ApprovalKind, ToolStatus
from dcode.settings.config import ApprovalMode
from dcode.tui.status import StatusBar, mode_label
from dcode.tui.transcript import NoticeEntry
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.support.web_hosts import allow_private
from tests.test_tui_app_support import Harness, make_settings, running_app


def notices(h: Harness) -> list[str]:
    return [entry.text for entry in h.entries(NoticeEntry)]


def write(name: str, content: str = "hello\n") -> object:
    return reply(tool_calls=[tool_call("write_file", {"file_path": name, "content": content})])


async def test_y_approves_and_the_diff_is_shown(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server, workspace, dcode_home, write("a.txt", "alpha\nbeta\n"), reply("written")
    ) as h:
        await h.send("write a")
        call = await h.approval()
        screen = h.text()
        assert "Allow this edit?" in screen and "+alpha" in screen and "+beta" in screen
        assert "file edits need approval" in screen
        assert not (workspace / "a.txt").exists()
        await h.press("y")
        await h.idle()
        assert (workspace / "a.txt").read_text() == "alpha\nbeta\n"
        assert call.status is ToolStatus.OK
        assert "Allow this edit?" not in h.text()
        assert h.app.focused is h.app.prompt_input.area


async def test_a_approves_the_kind_for_the_session_until_approve_mode_withdraws_it(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (
        write("a.txt"),
        reply("one"),
        write("b.txt"),
        reply("two"),
        write("c.txt"),
        reply("three"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("write a")
        await h.approval()
        await h.press("a")
        await h.idle()
        assert "⏵ manual +edit: ask before shell, web fetches and other tools" in h.text()
        await h.send("write b")
        await h.idle()  # no second question
        assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()
        assert h.app.runner is not None and h.app.runner.policy.session_allowed
        await h.send("/approve")
        await h.until(
            lambda: (
                notices(h)[-1:]
                == [
                    "approval mode is manual +edit: ask before shell, web fetches and other tools · /approve manual, edits, all or plan sets it"
                ]
            ),
            what="the mode line",
        )
        await h.send("/approve manual")
        withdrawn = "approval mode set to manual: ask before edits, shell, web fetches and other tools · the session's yes to edit is withdrawn"
        await h.until(lambda: notices(h)[-1:] == [withdrawn], what="the confirmation")
        assert "⏵ manual: ask before edits, shell, web fetches and other tools" in h.text()
        assert h.app.runner is not None and not h.app.runner.policy.session_allowed
        await h.send("write c")
        await h.approval()  # it asks again
        await h.press("y")
        await h.idle()
        assert (workspace / "c.txt").exists()


def test_mode_labels_name_what_still_asks() -> None:
    # Everything manual asks about, whether or not something was allowed for the session.
    assert (
        mode_label(ApprovalMode.MANUAL)
        == "manual: ask before edits, shell, web fetches and other tools"
    )
    assert (
        mode_label(ApprovalMode.EDITS)
        == "edits: ask before edits outside the workspace, shell, web fetches and other tools"
    )
    assert (
        mode_label(ApprovalMode.MANUAL, {ApprovalKind.SHELL})
        == "manual +shell: ask before edits, web fetches and other tools"
    )
    assert (
        mode_label(ApprovalMode.MANUAL, {ApprovalKind.FETCH})
        == "manual +fetch: ask before edits, shell and other tools"
    )
    assert (
        mode_label(ApprovalMode.EDITS, {ApprovalKind.SHELL})
        == "edits +shell: ask before edits outside the workspace, web fetches and other tools"
    )
    assert (
        mode_label(ApprovalMode.EDITS, {ApprovalKind.EDIT, ApprovalKind.SHELL})
        == "edits +edit +shell: ask before web fetches and other tools"
    )
    everything = {ApprovalKind.EDIT, ApprovalKind.SHELL, ApprovalKind.FETCH}
    assert (
        mode_label(ApprovalMode.EDITS, everything)
        == "edits +edit +fetch +shell: ask before other tools"
    )
    assert (
        mode_label(ApprovalMode.MANUAL, everything | {ApprovalKind.TOOL})
        == "manual +edit +fetch +shell +tool: no questions for the rest of the session"
    )
    assert (
        mode_label(ApprovalMode.MANUAL, {ApprovalKind.EDIT})
        == "manual +edit: ask before shell, web fetches and other tools"
    )
    assert mode_label(ApprovalMode.ALL, {ApprovalKind.SHELL}) == "all: approve everything"


async def test_n_rejects_and_the_model_is_told(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server, workspace, dcode_home, write("a.txt"), reply("ok, not writing")
    ) as h:
        await h.send("write a")
        call = await h.approval()
        await h.press("n")
        await h.idle()
        assert not (workspace / "a.txt").exists()
        assert call.status is ToolStatus.DENIED
        [result] = h.tool_results()
        assert result.startswith("denied:")
        screen = h.text()
        assert screen.count("rejected") == 1 and "denied" not in screen  # said once, not twice


async def test_tab_rejects_with_feedback_the_model_reads(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server, workspace, dcode_home, write("a.txt"), reply("I will use b.txt")
    ) as h:
        await h.send("write a")
        await h.approval()
        await h.press("tab")
        await h.press(*"use b.txt instead")
        await h.press("enter")
        await h.idle()
        assert not (workspace / "a.txt").exists()
        [result] = h.tool_results()
        assert "use b.txt instead" in result
        screen = h.text()
        assert "rejected: use b.txt instead" in screen
        assert screen.count("use b.txt instead") == 1 and "denied" not in screen


async def test_esc_at_an_approval_rejects_and_stops_the_turn(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, write("a.txt"), reply("after")) as h:
        await h.send("write a")
        await h.approval()
        await h.press("escape")
        await h.idle()
        assert not (workspace / "a.txt").exists()
        assert len(h.server.requests) == 1  # stopped: the model was not asked again
        screen = h.text()
        assert (
            "rejected: stopped" in screen and "interrupted" not in screen and "denied" not in screen
        )
        await h.send("and now?")
        await h.idle()
        assert h.answers()[-1] == "after"


async def test_shell_approval_shows_the_command(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (
        reply(tool_calls=[tool_call("execute", {"command": "echo hi > shell.txt"})]),
        reply("ran"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("run it")
        await h.approval()
        screen = h.text()
        assert "Allow this shell command?" in screen and "$ echo hi > shell.txt" in screen
        await h.press("y")
        await h.idle()
        assert (workspace / "shell.txt").read_text() == "hi\n"


async def test_a_web_fetch_asks_with_its_whole_url_and_a_remembers_fetches_only(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    server.pages["/docs/start"] = (200, "text/plain", b"Start here.")
    # The user's config lets web_fetch reach this local server; the approval shows the URL as
    # it will be fetched, not as the model spelled it.
    settings = make_settings(
        dcode_home,
        workspace,
        server,
        fetch_private=allow_private(dcode_home, f"localhost:{server.port}"),
    )
    url = f"http://LocalHost.:{server.port}/docs/start?topic=install"
    steps = (
        reply(tool_calls=[tool_call("web_fetch", {"url": url})]),
        reply("read it"),
        reply(tool_calls=[tool_call("web_fetch", {"url": url})]),
        reply("read it again"),
        reply(tool_calls=[tool_call("execute", {"command": "true"})]),
        reply("ran"),
    )
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("read the docs")
        call = await h.approval()
        screen = h.text()
        assert (
            "Allow this web fetch?" in screen
            and f"GET http://localhost:{server.port}/docs/start?topic=install" in screen
        )
        assert (
            "fetching a URL needs approval" in screen
            and "allow web fetches for this session" in screen
        )
        assert not any(
            r.path == "/docs/start" for r in server.all_requests
        )  # nothing fetched before the yes
        await h.press("a")
        await h.idle()
        assert call.status is ToolStatus.OK
        assert h.tool_results()[-1].endswith("Start here.")
        assert "⏵ manual +fetch: ask before edits, shell and other tools" in h.text()
        assert h.app.runner is not None and h.app.runner.policy.session_allowed == {
            ApprovalKind.FETCH
        }
        await h.send("again")
        await h.idle()  # no second question
        assert h.answers()[-1] == "read it again"
        await h.send("run true")
        await h.approval()  # the shell still asks
        assert "Allow this shell command?" in h.text()
        await h.press("y")
        await h.idle()


async def test_shift_tab_cycles_the_mode(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, write("a.txt"), reply("done")) as h:
        status = h.app.query_one(StatusBar)
        assert status.mode is ApprovalMode.MANUAL and "⏵ manual" in h.text()
        await h.press("shift+tab")
        assert h.app.mode is ApprovalMode.EDITS and status.mode is ApprovalMode.EDITS
        assert "⏵ edits" in h.text()
        await h.send("write a")  # edits mode: workspace writes need no approval
        await h.idle()
        assert (workspace / "a.txt").exists()
        assert h.app.runner is not None and h.app.runner.policy.mode is ApprovalMode.EDITS
        await h.press("shift+tab")
        assert h.app.runner.policy.mode is ApprovalMode.ALL and "⏵ all" in h.text()
        await h.press("shift+tab")
        assert (
            h.app.runner.policy.mode is ApprovalMode.PLAN
            and "⏵ plan: read only, until you approve a plan" in h.text()
        )
        await h.press("shift+tab")
        assert h.app.runner.policy.mode is ApprovalMode.MANUAL


async def test_approve_command_sets_the_mode(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/approve all")
        await h.until(
            lambda: "approval mode set to all: approve everything" in h.text(),
            what="the confirmation",
        )
        assert h.app.mode is ApprovalMode.ALL
        await h.send("/approve sometimes")
        await h.pilot.pause()
        assert h.app.mode is ApprovalMode.ALL
        assert "/approve takes manual, edits, all or plan" in h.text()


async def test_keys_typed_for_the_prompt_do_not_answer(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """Typing the next message as the question appears: the keys go to the prompt, not the question."""
    slow = reply(
        tool_calls=[tool_call("write_file", {"file_path": "a.txt", "content": "x"})],
        chunk_delay=0.08,
        chunk_size=8,
    )
    async with running_app(server, workspace, dcode_home, slow, reply("done")) as h:
        await h.send("write a")
        await h.until(lambda: h.calls(), what="the call to start")
        while not h.app.transcript.pending_approvals:  # typing on as the question arrives
            await h.type("x")
            await h.pilot.pause(0.05)
        typed = h.app.prompt_input.text
        await h.approval()
        await h.press("n", "o")  # within the grace period: kept for the prompt
        assert h.app.transcript.pending_approvals
        assert h.app.prompt_input.text == typed + "no"
        await h.pilot.pause(0.45)
        await h.press("y")
        await h.idle()
        assert (workspace / "a.txt").exists()
