""" "Yes for the session" to an MCP tool covers that tool, or, asked, every tool of its server,
and nothing else: not another server's tools, not the same name once it is another server's.
The policy alone, then the real engine with real MCP servers and the scripted model, then the
TUI's keys."""

from __future__ import annotations

from pathlib import Path

from dcode.agent.approval import ApprovalDecision, ApprovalPolicy, ToolOrigin, remember
from dcode.agent.backends import LocalBackend
from dcode.agent.events import ApprovalKind, ApprovalRequested, ToolCallFinished, ToolStatus
from dcode.mcp.plan import plan
from dcode.settings.config import ApprovalMode
from dcode.tui.transcript import NoticeEntry
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import running_app


def test_a_grant_follows_the_tool_not_the_name_the_model_calls(tmp_path: Path) -> None:
    """Servers ``a_b`` and ``a.b`` both clean to ``mcp__a_b__…``: the plain name goes to whichever
    is listed first among those connected, so it can pass from one to the other mid-session."""
    origins = {"mcp__a_b__x": ToolOrigin("a_b", "x")}
    gate = ApprovalPolicy(ApprovalMode.MANUAL, LocalBackend(tmp_path), mcp_origin=origins.get)
    verdict = gate.check("mcp__a_b__x", {})
    assert verdict is not None and verdict.origin == ToolOrigin("a_b", "x")
    remember(gate, verdict)
    assert gate.check("mcp__a_b__x", {}) is None
    origins.update(
        {"mcp__a_b__x": ToolOrigin("a.b", "x"), "mcp__a_b__x_1f2e3d4c": ToolOrigin("a_b", "x")}
    )
    assert gate.check("mcp__a_b__x", {}) is not None  # another server's tool now: asked
    assert gate.check("mcp__a_b__x_1f2e3d4c", {}) is None  # the one approved, under its new name
    assert gate.session_allowed == set()


def test_a_whole_server_is_that_server_by_its_whole_name(tmp_path: Path) -> None:
    origins = {
        "mcp__calc__add": ToolOrigin("calc", "add"),
        "mcp__calc__mul": ToolOrigin("calc", "mul"),
        "mcp__calc__evil__run": ToolOrigin("calc__evil", "run"),
        "mcp__calc___x": ToolOrigin("calc_", "x"),
    }
    gate = ApprovalPolicy(ApprovalMode.EDITS, LocalBackend(tmp_path), mcp_origin=origins.get)
    verdict = gate.check("mcp__calc__add", {})
    assert verdict is not None
    remember(gate, verdict, whole_server=True)
    assert gate.check("mcp__calc__add", {}) is None and gate.check("mcp__calc__mul", {}) is None
    assert (
        gate.check("mcp__calc__evil__run", {}) is not None
        and gate.check("mcp__calc___x", {}) is not None
    )
    assert gate.check("execute", {"command": "true"}) is not None
    assert gate.session_tools.rules() == ["calc__*"]


def test_yes_for_the_session_to_an_unknown_tool_that_is_no_servers_covers_it_alone(
    tmp_path: Path,
) -> None:
    gate = ApprovalPolicy(ApprovalMode.MANUAL, LocalBackend(tmp_path))
    verdict = gate.check("mystery_tool", {})
    assert verdict is not None and verdict.origin == ToolOrigin("", "mystery_tool")
    remember(gate, verdict, whole_server=True)  # there is no server to extend it to
    assert gate.check("mystery_tool", {}) is None and gate.check("other_tool", {}) is not None
    assert gate.session_tools.rules() == ["mystery_tool"]


class Answers:
    """Answers each question with the next decision, and keeps the questions."""

    def __init__(self, *decisions: ApprovalDecision) -> None:
        self.decisions = list(decisions)
        self.asked: list[ApprovalRequested] = []

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        self.asked.append(request)
        return self.decisions.pop(0)


def call(name: str, **args: object) -> object:
    return reply(tool_calls=[tool_call(name, args)])


async def test_the_engine_asks_again_for_another_tool_and_another_server(
    server, make_settings, dcode_home: Path
) -> None:
    from dcode.agent.engine import Engine

    write_config(dcode_home / "mcp.json", {"calc": stdio_entry(), "other": stdio_entry()})
    server.script(
        call("mcp__calc__add", a=1, b=2),  # asked: yes to this tool for the session
        call("mcp__calc__add", a=3, b=4),  # not asked
        call("mcp__calc__pid"),  # asked: another tool of calc; yes to all of calc's
        call("mcp__calc__big", n=5),  # not asked
        call("mcp__other__add", a=5, b=6),  # asked: another server; yes, once
        call("mcp__other__add", a=7, b=8),  # asked again
        reply("done"),
    )
    answers = Answers(
        ApprovalDecision(True, remember=True),
        ApprovalDecision(True, remember=True, whole_server=True),
        ApprovalDecision(True),
        ApprovalDecision(True),
    )
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        engine.start_mcp(plan(settings).start)
        runner = engine.runner(answers, mode=ApprovalMode.MANUAL)
        events = [event async for event in runner.run_turn("use the tools")]
        grants = runner.policy.session_tools.rules()
        kinds = set(runner.policy.session_allowed)
    asked = [(r.tool, r.kind, r.mcp_server, r.mcp_tool) for r in answers.asked]
    assert asked == [
        ("mcp__calc__add", ApprovalKind.TOOL, "calc", "add"),
        ("mcp__calc__pid", ApprovalKind.TOOL, "calc", "pid"),
        ("mcp__other__add", ApprovalKind.TOOL, "other", "add"),
        ("mcp__other__add", ApprovalKind.TOOL, "other", "add"),
    ]
    assert [e.result.status for e in events if isinstance(e, ToolCallFinished)] == [
        ToolStatus.OK
    ] * 6
    assert grants == ["calc__*", "calc__add"] and kinds == set()


def notices(h) -> list[str]:
    return [entry.text for entry in h.entries(NoticeEntry)]


async def test_the_tui_offers_the_tool_or_its_server_and_shows_what_was_allowed(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    steps = (
        call("mcp__calc__add", a=1, b=2),
        reply("one"),
        call("mcp__calc__pid"),
        reply("two"),
        call("mcp__calc__big", n=3),
        reply("three"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("add")
        await h.approval(timeout=30)
        screen = h.text()
        assert (
            "a yes, and allow calc__add for this session" in screen
            and "s yes, and all of calc's tools" in screen
        )
        await h.press("a")
        await h.idle()
        assert (
            "⏵ manual +calc__add: ask before edits, shell, web fetches and other tools" in h.text()
        )
        await h.send("pid")
        await h.approval()  # another tool of calc: asked
        await h.press("s")
        await h.idle()
        assert (
            "⏵ manual +calc__* +calc__add: ask before edits, shell, web fetches and other tools"
            in h.text()
        )
        await h.send("big")
        await h.idle()  # no question
        assert h.tool_results()[-1] == "012"
        await h.send("/approve manual")
        withdrawn = "approval mode set to manual: ask before edits, shell, web fetches and other tools · the session's yes to calc__* and calc__add is withdrawn"
        await h.until(lambda: notices(h)[-1:] == [withdrawn], what="the confirmation")
        assert h.app.runner is not None and not h.app.runner.policy.session_tools
