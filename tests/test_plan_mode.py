"""Plan mode through the real loop: ChatOpenAI against the scripted server, real files, a real
MCP server over stdio, real SQLite threads. Nothing that writes runs in plan mode; the plan goes
to the user and each answer does what it says."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from dcode.agent import plan_mode
from dcode.agent.approval import ApprovalDecision, ApprovalPolicy
from dcode.agent.backends import LocalBackend
from dcode.agent.engine import Engine
from dcode.agent.events import (
    ApprovalKind,
    ApprovalRequested,
    ToolCallFinished,
    ToolStatus,
    TurnFinished,
)
from dcode.agent.tools.spec import (
    EDIT_FILE,
    EXECUTE,
    EXIT_PLAN_MODE,
    GREP,
    READ_FILE,
    TASK,
    WEB_FETCH,
    WRITE_FILE,
)
from dcode.mcp.plan import plan as mcp_plan
from dcode.settings.config import ApprovalMode, McpSettings
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply, tool_call

PLAN = (
    "# Fix the greeting\n\n1. Edit `hello.py`: print **hello, world**.\n2. Run `python hello.py`."
)
JOB = "Look at hello.py, then write b.txt and run the shell."


class Answers:
    """Answers each question with the next decision and keeps the questions; a question with no
    decision left fails the test (plan mode must not ask about writes at all)."""

    def __init__(self, *decisions: ApprovalDecision) -> None:
        self.decisions = list(decisions)
        self.asked: list[ApprovalRequested] = []

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        self.asked.append(request)
        assert self.decisions, f"nothing should have asked, but {request.tool} did"
        return self.decisions.pop(0)


def call(name: str, **args: object) -> object:
    return reply(tool_calls=[tool_call(name, args)])


def finished(events: list[object]) -> dict[str, ToolCallFinished]:
    return {e.call_id: e for e in events if isinstance(e, ToolCallFinished)}


def test_plan_mode_refuses_by_kind_and_asks_for_fetches_and_the_plan(tmp_path: Path) -> None:
    gate = ApprovalPolicy(ApprovalMode.PLAN, LocalBackend(tmp_path), mcp_allow=lambda name: True)
    for name, args in [
        (WRITE_FILE.name, {"file_path": "a", "content": ""}),
        (EXECUTE.name, {"command": "true"}),
        ("mcp__calc__note", {}),
    ]:
        verdict = gate.check(name, args)
        assert verdict is not None and verdict.refused and name in verdict.reason, name
    assert (
        gate.check(READ_FILE.name, {"file_path": "a"}) is None
        and gate.check(TASK.name, {"description": "x"}) is None
    )
    fetch = gate.check(WEB_FETCH.name, {"url": "https://docs.example.org/"})
    assert fetch is not None and not fetch.refused and fetch.kind is ApprovalKind.FETCH
    question = gate.check(EXIT_PLAN_MODE.name, {"plan": PLAN})
    assert question is not None and question.kind is ApprovalKind.PLAN and not question.refused
    gate.session_allowed.update(
        {ApprovalKind.EDIT, ApprovalKind.SHELL}
    )  # a yes for the session does not open plan mode
    assert gate.check(EXECUTE.name, {"command": "true"}).refused  # type: ignore[union-attr]
    gate.enter(ApprovalMode.EDITS)
    assert (
        gate.check(EXIT_PLAN_MODE.name, {"plan": PLAN}) is None
        and gate.check(WRITE_FILE.name, {"file_path": "a", "content": ""}) is None
    )


async def test_plan_mode_cannot_write(
    server, make_settings, workspace: Path, dcode_home: Path, tmp_path: Path
) -> None:
    """A model that tries every way to change something: write_file, edit_file, the shell, an
    MCP tool the user allowed to run without asking, and a subagent that writes and runs the
    shell. All are refused without a question; the files are as they were; the turn goes on."""
    (workspace / "hello.py").write_text("print('hi')\n")
    outside = tmp_path / "from-mcp.txt"
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    server.script(
        call(WRITE_FILE.name, file_path="a.txt", content="x"),
        call(EDIT_FILE.name, file_path="hello.py", old_string="hi", new_string="bye"),
        call(EXECUTE.name, command="echo pwned > shell.txt"),
        call("mcp__calc__note", path=str(outside), text="pwned"),
        reply(tool_calls=[tool_call(TASK.name, {"description": JOB})]).answering("plan the fix"),
        call(READ_FILE.name, file_path="hello.py").answering(JOB),
        call(WRITE_FILE.name, file_path="b.txt", content="x").answering(JOB),
        call(EXECUTE.name, command="touch sub.txt").answering(JOB),
        reply("I could not write anything.").answering(JOB),
        reply("Everything was refused; here is what I found.").answering("plan the fix"),
    )
    settings = make_settings(mcp=McpSettings(allow=("calc__*",)))
    answers = Answers()
    async with await Engine.open(settings) as engine:
        engine.start_mcp(mcp_plan(settings).start)
        runner = engine.runner(answers, mode=ApprovalMode.PLAN)
        events = [event async for event in runner.run_turn("plan the fix")]
    assert answers.asked == []
    assert (workspace / "hello.py").read_text() == "print('hi')\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["hello.py"] and not outside.exists()
    last = events[-1]
    assert (
        isinstance(last, TurnFinished)
        and not last.is_error
        and last.result == "Everything was refused; here is what I found."
    )
    results = [e for e in events if isinstance(e, ToolCallFinished)]
    denied = [e.name for e in results if e.result.status is ToolStatus.DENIED]
    assert denied == [
        WRITE_FILE.name,
        EDIT_FILE.name,
        EXECUTE.name,
        "mcp__calc__note",
        WRITE_FILE.name,
        EXECUTE.name,
    ]
    assert [e.name for e in results if e.result.status is ToolStatus.OK] == [
        READ_FILE.name,
        TASK.name,
    ]
    # The model read each refusal and went on: every refused call's result reached it.
    parent = [text for role, text in server.transcript(len(server.requests) - 1) if role == "tool"]
    assert sum(text.startswith("denied: plan mode:") for text in parent) == 4
    child = [text for role, text in server.transcript(8) if role == "tool"]
    assert sum(text.startswith("denied: plan mode:") for text in child) == 2
    # The session's agent is told it plans and offered the plan tool; the subagent is told it only reads.
    assert (
        "# Plan mode" in server.system_text(0)
        and EXIT_PLAN_MODE.name in server.requests[0].tool_names
    )
    assert (
        "# Read only" in server.system_text(5)
        and EXIT_PLAN_MODE.name not in server.requests[5].tool_names
    )


async def test_approving_the_plan_switches_the_mode_and_the_work_goes_on(
    server, make_settings, workspace: Path, dcode_home: Path
) -> None:
    server.script(
        call(GREP.name, pattern="print", path="."),
        call(EXIT_PLAN_MODE.name, plan=PLAN),
        call(WRITE_FILE.name, file_path="hello.py", content="print('hello, world')\n"),
        reply("Done: hello.py prints hello, world."),
    )
    answers = Answers(plan_mode.approve(ApprovalMode.EDITS))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(answers, mode=ApprovalMode.PLAN)
        events = [event async for event in runner.run_turn("plan the greeting fix")]
        mode = runner.policy.mode
        session = runner.session_id
    [question] = answers.asked  # the plan; the write that follows runs without asking, in edits
    assert question.kind is ApprovalKind.PLAN and question.args == {"plan": PLAN}
    assert (
        mode is ApprovalMode.EDITS
        and (workspace / "hello.py").read_text() == "print('hello, world')\n"
    )
    saved = dcode_home / "conversation_history" / f"{session}.plan.md"
    assert saved.read_text() == PLAN + "\n" and stat.S_IMODE(saved.stat().st_mode) == 0o600
    result = {e.name: e for e in finished(events).values()}[EXIT_PLAN_MODE.name]
    assert result.result.status is ToolStatus.OK
    told = [text for role, text in server.transcript(2) if role == "tool"][-1]
    assert "approved" in told and "edits" in told and str(saved) in told
    assert "# Plan mode" in server.system_text(1) and "# Plan mode" not in server.system_text(2)
    assert EXIT_PLAN_MODE.name in server.requests[1].tool_names
    assert EXIT_PLAN_MODE.name not in server.requests[2].tool_names  # offered only while planning
    assert (
        isinstance(events[-1], TurnFinished)
        and events[-1].result == "Done: hello.py prints hello, world."
    )


async def test_feedback_keeps_planning_and_rejecting_ends_the_turn(
    server, make_settings, workspace: Path
) -> None:
    server.script(
        call(EXIT_PLAN_MODE.name, plan="# First\nrewrite everything"),
        call(EXIT_PLAN_MODE.name, plan=PLAN),
        reply("this must never be asked for"),
    )
    answers = Answers(plan_mode.revise("keep the old API"), plan_mode.reject())
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(answers, mode=ApprovalMode.PLAN)
        events = [event async for event in runner.run_turn("plan it")]
        mode = runner.policy.mode
        messages = await runner.messages()
    assert [q.args["plan"] for q in answers.asked] == ["# First\nrewrite everything", PLAN]
    feedback = [text for role, text in server.transcript(1) if role == "tool"][-1]
    assert "keep the old API" in feedback and feedback.startswith("denied:")
    assert len(server.requests) == 2  # rejected: the model is not asked again
    assert mode is ApprovalMode.PLAN
    last = events[-1]
    assert isinstance(last, TurnFinished) and not last.is_error and not last.interrupted
    assert messages[-1].type == "tool" and "rejected the plan" in str(messages[-1].content)
    assert [e.result.status for e in finished(events).values()] == [
        ToolStatus.DENIED,
        ToolStatus.DENIED,
    ]


@pytest.mark.parametrize("mode", [ApprovalMode.EDITS, ApprovalMode.ALL])
async def test_outside_plan_mode_the_plan_tool_is_not_offered_and_asks_nothing(
    server, make_settings, mode: ApprovalMode
) -> None:
    server.script(call(EXIT_PLAN_MODE.name, plan=PLAN), reply("ok"))
    answers = Answers()
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(answers, mode=mode)
        events = [event async for event in runner.run_turn("go")]
    assert EXIT_PLAN_MODE.name not in server.requests[
        0
    ].tool_names and "# Plan mode" not in server.system_text(0)
    assert answers.asked == [] and runner.policy.mode is mode
    told = [text for role, text in server.transcript(1) if role == "tool"][-1]
    assert told.startswith("Not in plan mode")
    assert isinstance(events[-1], TurnFinished) and events[-1].result == "ok"


def test_an_untrusted_project_may_choose_plan_mode_but_not_leave_it_for_a_looser_one(
    tmp_path: Path,
) -> None:
    from dcode.settings.config import Settings
    from dcode.settings.project_gate import gate

    mine = Settings(home=tmp_path, workspace=tmp_path)
    assert gate({"approve": "plan"}, mine, ApprovalMode.MANUAL)[0] == {
        "approve": "plan"
    }  # stricter than manual
    planning = Settings(home=tmp_path, workspace=tmp_path, approve=ApprovalMode.PLAN)
    allowed, ignored = gate({"approve": "manual"}, planning, ApprovalMode.MANUAL)
    assert allowed == {} and ignored[0].reason == "looser than 'plan', your own choice"
