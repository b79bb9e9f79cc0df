"""A write's diff reads the same in its approval, in the finished call, and in the resumed
session, even after the file has changed again (real engine, SQLite and scripted server)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from dcode.agent.events import ToolStatus
from dcode.settings.config import ApprovalMode
from dcode.tui.approval_widget import ApprovalWidget
from dcode.tui.transcript import ToolCallEntry
from dcode.tui.transcript.tools import ToolCallView
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import Harness, make_settings, running_app


def approval_diff(h: Harness) -> str:
    widget = h.app.query_one(ApprovalWidget)
    return widget.query_one(".approval-diff", Static).content.plain  # type: ignore[union-attr]


async def finished_diff(h: Harness, call: ToolCallEntry) -> str:
    """The finished call's widget, expanded so that its whole diff shows."""
    await h.until(lambda: isinstance(call.view, ToolCallView), what="the call's widget")
    view = call.view
    assert isinstance(view, ToolCallView)
    view.set_expanded(True)
    await h.pilot.pause()
    return view.query_one(".tool-body", Static).content.plain  # type: ignore[union-attr]


async def approve_and_resume(
    server: ScriptedModelServer, workspace: Path, home: Path, name: str, args: dict[str, object]
) -> tuple[str, str, str]:
    """The diff as the approval, the finished call and the resumed session show it; the file
    is changed again between the session and its resume."""
    steps = (reply(tool_calls=[tool_call(name, args)]), reply("done"))
    async with running_app(server, workspace, home, *steps) as h:
        await h.send("change it")
        await h.approval()
        asked = approval_diff(h)
        await h.press("y")
        await h.idle()
        [call] = h.calls()
        assert call.status is ToolStatus.OK
        finished = await finished_diff(h, call)
        assert h.app.runner is not None
        session_id = h.app.runner.session_id
    (workspace / str(args["file_path"])).write_text("rewritten later\n")
    async with running_app(server, workspace, home, session_id=session_id) as h:
        await h.until(lambda: h.calls(), what="the resumed transcript")
        [call] = h.calls()
        resumed = await finished_diff(h, call)
    return asked, finished, resumed


async def test_a_new_files_diff_agrees_everywhere(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    args = {"file_path": "notes.txt", "content": "alpha\nbeta\n"}
    asked, finished, resumed = await approve_and_resume(
        server, workspace, dcode_home, "write_file", args
    )
    assert asked.splitlines()[:2] == ["--- /dev/null", "+++ b/notes.txt"]
    assert "+alpha\n+beta" in asked
    assert finished == asked
    assert resumed == asked


async def test_an_edits_diff_agrees_everywhere(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "b.txt").write_text("one\ntwo\nthree\n")
    args = {"file_path": "b.txt", "old_string": "two", "new_string": "TWO"}
    asked, finished, resumed = await approve_and_resume(
        server, workspace, dcode_home, "edit_file", args
    )
    assert asked.splitlines()[:2] == ["--- a/b.txt", "+++ b/b.txt"]
    assert " one\n-two\n+TWO\n three" in asked  # the context comes from the file, as it was
    assert finished == asked
    assert resumed == asked


async def test_an_unasked_write_shows_the_diff_it_made(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """In ``edits`` mode nothing is asked; the finished call still shows a new file as new, and
    an overwrite against what it replaced."""
    (workspace / "old.txt").write_text("before\n")
    steps = (
        reply(tool_calls=[tool_call("write_file", {"file_path": "new.txt", "content": "fresh\n"})]),
        reply(tool_calls=[tool_call("write_file", {"file_path": "old.txt", "content": "after\n"})]),
        reply("done"),
    )
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.EDITS)
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("write both")
        await h.idle()
        created, overwritten = h.calls()
        assert (await finished_diff(h, created)).splitlines()[:2] == [
            "--- /dev/null",
            "+++ b/new.txt",
        ]
        lines = (await finished_diff(h, overwritten)).splitlines()
        assert lines[:2] == ["--- a/old.txt", "+++ b/old.txt"]
        assert "-before" in lines and "+after" in lines
