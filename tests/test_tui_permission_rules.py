"""The approval offers a rule derived from the parsed command; ``p`` keeps it for this project
(a file under ``$DCODE_HOME``, not in the repository), and the same kind of call runs without a
question from then on; ``/permissions`` lists it with its source and the recent denials, and
removes it (real engine, scripted server)."""

from __future__ import annotations

from pathlib import Path

from dcode.settings.permission_sources import project_file
from dcode.tui.transcript import NoticeEntry
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import Harness, running_app


def notices(h: Harness) -> list[str]:
    return [entry.text for entry in h.entries(NoticeEntry)]


def shell(command: str) -> object:
    return reply(tool_calls=[tool_call("execute", {"command": command})])


async def test_always_allow_in_this_project_then_list_and_remove(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (
        shell("echo one > one.txt"),
        reply("one"),
        shell("echo   one two > two.txt"),
        reply("two"),
        shell("echo one; touch evil"),
        reply("three"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("first")
        await h.approval()
        assert "always allow Bash(echo one *) in this project" in h.text()
        await h.press("p")
        await h.idle()
        assert (workspace / "one.txt").exists()
        saved = project_file(dcode_home, workspace)
        assert "Bash(echo one *)" in saved.read_text()
        assert not (workspace / ".claude").exists() and not (workspace / ".dcode").exists()

        await h.send("second")
        await h.idle()  # no question: the rule covers it
        assert (workspace / "two.txt").exists()

        await h.send("third")
        await h.approval()  # touch is a second command the rule does not cover
        await h.press("n")
        await h.idle()
        assert not (workspace / "evil").exists()

        await h.send("/permissions")
        await h.until(
            lambda: any(
                "Bash(echo one *)" in text and "recent denials" in text for text in notices(h)
            ),
            what="the listing",
        )
        listing = notices(h)[-1]
        assert str(saved) in listing and "the user rejected this call" in listing

        await h.send("/permissions remove Bash(echo one *)")
        await h.until(
            lambda: notices(h)[-1].startswith("removed allow rule Bash(echo one *)"),
            what="the removal",
        )
        assert "Bash(echo one *)" not in saved.read_text()


async def test_a_repository_s_allow_rules_wait_for_the_trust_question(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from dcode.settings.config import ApprovalMode, load_settings
    from dcode.tui.screens.trust import ProjectTrustScreen

    dcode_home.mkdir(exist_ok=True)
    (dcode_home / "config.toml").write_text(
        f'model = "openai:test-model"\nbase_url = "{server.base_url}"\napi = "chat"\n'
    )
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        '{"permissions": {"allow": ["Bash(touch *)"]}}'
    )
    server.script(shell("touch made"), reply("made"))
    reload = lambda: load_settings(workspace=workspace, default_approve=ApprovalMode.MANUAL)  # noqa: E731
    async with running_app(
        server,
        workspace,
        dcode_home,
        settings=reload(),
        wait_ready=False,
        reload_settings=reload,
        size=(120, 50),
    ) as h:
        await h.until(
            lambda: isinstance(h.app.screen, ProjectTrustScreen), what="the trust question"
        )
        await h.until(lambda: "Trust this project?" in h.text(), what="the question painted")
        shown = " ".join(h.text().replace("│", " ").split())
        assert (
            "Permission rules that let calls run without asking" in shown
            and "Bash(touch *)" in shown
        )
        await h.press("y")
        await h.ready()
        await h.send("make it")
        await h.idle()  # no approval: the trusted project's rule allows it
        assert (workspace / "made").exists()
        assert "its allow rules (Bash(touch *)) apply" in " ".join(h.text().split())


async def test_a_write_to_settings_asks_in_all_mode_and_offers_no_session_yes(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from dcode.settings.config import ApprovalMode

    write = reply(
        tool_calls=[
            tool_call(
                "write_file",
                {
                    "file_path": ".claude/settings.json",
                    "content": '{"permissions": {"allow": ["Bash"]}}',
                },
            )
        ]
    )
    async with running_app(server, workspace, dcode_home, write, reply("asked")) as h:
        h.app.set_mode(ApprovalMode.ALL)
        await h.send("widen it")
        await h.approval()
        shown = " ".join(h.text().split())
        assert (
            ".claude/settings.json decides what dcode may" in shown
            and "always needs approval" in shown
            and "for this session" not in shown
        )
        await h.press("a")  # not offered: nothing happens
        assert not (workspace / ".claude" / "settings.json").exists()
        await h.press("n")
        await h.idle()
        assert not (workspace / ".claude" / "settings.json").exists()


async def test_always_allow_everywhere_goes_to_the_user_s_config(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    import tomllib

    steps = (shell("echo hi > a.txt"), reply("one"), shell("echo  hi there > b.txt"), reply("two"))
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("first")
        await h.approval()
        assert "…everywhere" in h.text()
        await h.press("e")
        await h.idle()
        assert (workspace / "a.txt").exists()
        config = tomllib.loads((dcode_home / "config.toml").read_text())
        assert config["permissions"]["allow"] == ["Bash(echo hi *)"]
        assert not project_file(dcode_home, workspace).exists()
        assert not (workspace / ".claude").exists() and not (workspace / ".dcode").exists()
        await h.send("second")
        await h.idle()  # no question: the rule covers it
        assert (workspace / "b.txt").exists()
