"""Plan mode in the TUI (real engine, scripted server, Textual's pilot): /plan, the plan drawn as
Markdown with its four answers, and a resumed session showing the plan as it was answered."""

from __future__ import annotations

from pathlib import Path

from dcode.agent.events import ToolStatus
from dcode.agent.tools.spec import EXIT_PLAN_MODE, READ_FILE, WRITE_FILE
from dcode.settings.config import ApprovalMode
from dcode.tui.plan_widget import PlanQuestion
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import Harness, running_app

PLAN = "# Fix the greeting\n\n1. Edit `hello.py` so it prints **hello, world**.\n2. Run it."


def call(name: str, **args: object) -> object:
    return reply(tool_calls=[tool_call(name, args)])


def planned(*after: object) -> tuple[object, ...]:
    return (
        call(READ_FILE.name, file_path="hello.py"),
        call(EXIT_PLAN_MODE.name, plan=PLAN),
        *after,
    )


async def plan_asked(h: Harness, task: str = "fix the greeting") -> None:
    await h.send(f"/plan {task}")
    await h.approval()
    assert isinstance(h.app.query_one(PlanQuestion), PlanQuestion)


def fix() -> object:
    return call(WRITE_FILE.name, file_path="hello.py", content="print('hello, world')\n")


async def test_plan_shows_the_plan_as_markdown_and_e_goes_on_in_edits(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "hello.py").write_text("print('hi')\n")
    async with running_app(server, workspace, dcode_home, *planned(fix(), reply("Fixed."))) as h:
        await plan_asked(h)
        assert (
            h.app.mode is ApprovalMode.PLAN
            and "⏵ plan: read only, until you approve a plan" in h.text()
        )
        screen = h.text()
        # The plan as Markdown: a heading, a numbered list, bold without its asterisks.
        assert "Fix the greeting" in screen and "# Fix" not in screen
        assert "prints hello, world" in screen and "**" not in screen
        assert "Approve this plan?" in screen
        for key in (
            "e approve, then edits",
            "m approve, then manual",
            "tab keep planning, with feedback",
            "n reject",
        ):
            assert key in screen, key
        assert h.server.requests[0].transcript()[-1] == ("user", "fix the greeting")
        await h.press("e")
        await h.idle()
        assert (
            h.app.mode is ApprovalMode.EDITS
            and h.app.runner is not None
            and h.app.runner.policy.mode is ApprovalMode.EDITS
        )
        assert (
            workspace / "hello.py"
        ).read_text() == "print('hello, world')\n"  # no question: edits
        assert "⏵ edits" in h.text() and "Approve this plan?" not in h.text()
        [plan_call] = [c for c in h.calls() if c.name == EXIT_PLAN_MODE.name]
        assert plan_call.status is ToolStatus.OK and "approved" in h.text()


async def test_m_goes_on_in_manual_and_the_next_edit_asks(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "hello.py").write_text("print('hi')\n")
    async with running_app(server, workspace, dcode_home, *planned(fix(), reply("Fixed."))) as h:
        await plan_asked(h)
        await h.press("m")
        await h.approval()  # the edit asks, in manual
        assert h.app.mode is ApprovalMode.MANUAL and "Allow this edit?" in h.text()
        await h.press("y")
        await h.idle()
        assert (workspace / "hello.py").read_text() == "print('hello, world')\n"


async def test_tab_keeps_planning_with_feedback_and_n_rejects(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "hello.py").write_text("print('hi')\n")
    steps = planned(call(EXIT_PLAN_MODE.name, plan="# Second plan\nKeep the old API."))
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await plan_asked(h)
        await h.press("tab")
        await h.press(*"keep the old API")
        await h.press("enter")
        await h.until(
            lambda: len(h.app.transcript.pending_approvals) == 1 and "Second plan" in h.text(),
            what="the revised plan",
        )
        await h.approval()
        assert "keep the old API" in h.tool_results()[-1]
        assert h.app.mode is ApprovalMode.PLAN
        await h.press("n")
        await h.idle()
        assert len(h.server.requests) == 3  # rejected: the model is not asked again
        assert (
            h.app.mode is ApprovalMode.PLAN
            and (workspace / "hello.py").read_text() == "print('hi')\n"
        )
        assert "rejected the plan" in h.text() and "Approve this plan?" not in h.text()


async def test_a_resumed_session_shows_the_plan_as_it_was_answered(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "hello.py").write_text("print('hi')\n")
    async with running_app(server, workspace, dcode_home, *planned(fix(), reply("Fixed."))) as h:
        await plan_asked(h)
        await h.press("e")
        await h.idle()
        assert h.app.runner is not None
        session_id = h.app.runner.session_id
        [live] = [c for c in h.calls() if c.name == EXIT_PLAN_MODE.name]
    async with running_app(server, workspace, dcode_home, session_id=session_id) as h:
        await h.until(lambda: h.prompts(), what="the resumed transcript")
        [plan_call] = [c for c in h.calls() if c.name == EXIT_PLAN_MODE.name]
        assert (plan_call.status, plan_call.preview, plan_call.args) == (
            live.status,
            live.preview,
            live.args,
        )
        screen = h.text()
        assert (
            "Fix the greeting" in screen
            and "prints hello, world" in screen
            and "approved" in screen
        )
        assert "Approve this plan?" not in screen
