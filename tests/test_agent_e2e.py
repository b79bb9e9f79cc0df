"""The whole agent loop in-process: real ChatOpenAI, real tools, real SQLite, both wires."""

from __future__ import annotations

import io
import json
from pathlib import Path

from dcode.agent.events import ApprovalRequested, ToolCallFinished, ToolStatus, TurnFinished
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.settings.config import ApprovalMode
from tests.support.model_server import fault, reply, tool_call


async def headless(
    settings, prompt: str, fmt: OutputFormat = OutputFormat.JSON, **kw
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings, HeadlessRequest(prompt=prompt, output_format=fmt, **kw), out=out, err=err
    )
    return code, out.getvalue(), err.getvalue()


def tool_results(server) -> list[tuple[str, str]]:
    return [
        (role, text) for role, text in server.transcript(len(server.requests) - 1) if role == "tool"
    ]


async def test_file_tools_round_trip(server, make_settings, workspace: Path, api: str) -> None:
    server.script(
        reply(
            tool_calls=[
                tool_call(
                    "write_file", {"file_path": "src/notes.py", "content": "alpha = 1\nbeta = 2\n"}
                )
            ]
        ),
        reply(tool_calls=[tool_call("read_file", {"file_path": "src/notes.py"})]),
        reply(
            tool_calls=[
                tool_call(
                    "edit_file",
                    {
                        "file_path": "src/notes.py",
                        "old_string": "beta = 2",
                        "new_string": "beta = 3",
                    },
                )
            ]
        ),
        reply(
            tool_calls=[
                tool_call("grep", {"pattern": "beta", "path": "."}),
                tool_call("glob", {"pattern": "**/*.py"}),
            ]
        ),
        reply("beta is now 3 in src/notes.py."),
    )
    code, out, err = await headless(make_settings(api), "make beta 3")
    assert code == 0, err
    result = json.loads(out)
    assert result["result"] == "beta is now 3 in src/notes.py."
    assert result["num_turns"] == 5 and result["is_error"] is False
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0
    assert (workspace / "src/notes.py").read_text() == "alpha = 1\nbeta = 3\n"
    transcript = server.transcript(4)
    tool_texts = [text for role, text in transcript if role == "tool"]
    assert "alpha = 1" in tool_texts[1]  # read_file saw the written content
    assert any("src/notes.py" in t and "beta = 3" in t for t in tool_texts)  # grep
    assert any(
        t.strip().endswith("src/notes.py") or "src/notes.py" in t for t in tool_texts[-1:]
    )  # glob
    assert server.requests[0].wire == api


async def test_shell_denied_in_edits_mode(server, make_settings, workspace: Path, api: str) -> None:
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "touch ran.txt"})]),
        reply("The shell was denied."),
    )
    code, _out, _ = await headless(make_settings(api, approve=ApprovalMode.EDITS), "run it")
    assert code == 0
    assert not (workspace / "ran.txt").exists()
    denied = [text for role, text in server.transcript(1) if role == "tool"]
    assert denied == ["denied: the shell needs approval; rerun with --approve all"]


async def test_shell_runs_in_all_mode(server, make_settings, workspace: Path, api: str) -> None:
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "echo hi > ran.txt && echo done"})]),
        reply("ok"),
    )
    code, _, _ = await headless(make_settings(api, approve=ApprovalMode.ALL), "run it")
    assert code == 0
    assert (workspace / "ran.txt").read_text() == "hi\n"
    result = next(text for role, text in server.transcript(1) if role == "tool")
    assert "done" in result and "exit code: 0" in result


async def test_write_outside_workspace_denied_in_edits_mode(
    server, make_settings, tmp_path: Path, api: str
) -> None:
    outside = tmp_path / "outside.txt"
    server.script(
        reply(tool_calls=[tool_call("write_file", {"file_path": str(outside), "content": "x"})]),
        reply("ok"),
    )
    code, _, _ = await headless(make_settings(api), "write outside")
    assert code == 0 and not outside.exists()
    assert "outside the workspace" in next(t for r, t in server.transcript(1) if r == "tool")


async def test_persistent_500_exits_1_and_keeps_the_prompt(server, make_settings, api: str) -> None:
    server.script(
        fault.status(500, message="upstream exploded").times(2)
    )  # max_retries=1: two tries
    settings = make_settings(api, max_retries=1)
    code, out, err = await headless(settings, "please survive", OutputFormat.TEXT)
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "500" in lines[0] and "upstream exploded" in lines[0]
    from dcode.agent.store import open_store

    info = open_store(settings).latest()
    assert info is not None and info.title == "please survive"
    # The prompt is in the checkpoint: resuming sends it again with the next one.
    server.script(reply("back again"))
    code, out, _ = await headless(settings, "second try", OutputFormat.TEXT, resume_id=info.id)
    assert code == 0 and out.strip() == "back again"
    texts = [t for r, t in server.requests[-1].transcript() if r == "user"]
    assert texts == ["please survive", "second try"]


async def test_two_429s_then_success(server, make_settings, api: str) -> None:
    server.script(fault.status(429, retry_after=0.05).times(2), reply("made it"))
    code, out, _ = await headless(make_settings(api, max_retries=3), "hi", OutputFormat.TEXT)
    assert code == 0 and out.strip() == "made it"
    assert len(server.requests) == 3


async def test_resume_sends_whole_history(server, make_settings, api: str) -> None:
    server.script(
        reply(tool_calls=[tool_call("ls", {"path": "."})]),
        reply("first answer"),
        reply("second answer"),
    )
    settings = make_settings(api)
    code, out, _ = await headless(settings, "first question")
    session_id = json.loads(out)["session_id"]
    code, out, _ = await headless(settings, "second question", resume_id=session_id)
    assert code == 0 and json.loads(out)["session_id"] == session_id
    roles = [role for role, _ in server.requests[-1].transcript() if role != "system"]
    assert roles == ["user", "tool_call", "tool", "assistant", "user"]
    texts = [t for r, t in server.requests[-1].transcript() if r in {"user", "assistant"}]
    assert texts == ["first question", "first answer", "second question"]


async def test_continue_picks_latest_in_directory(server, make_settings, api: str) -> None:
    server.script(reply("one"), reply("two"))
    settings = make_settings(api)
    _, out, _ = await headless(settings, "q1")
    first = json.loads(out)["session_id"]
    _, out, _ = await headless(settings, "q2", continue_here=True)
    assert json.loads(out)["session_id"] == first


async def test_max_turns_stops_the_loop(server, make_settings, api: str) -> None:
    server.script(reply(tool_calls=[tool_call("ls", {"path": "."})]).forever())
    code, out, _err = await headless(make_settings(api, max_turns=2), "loop forever")
    result = json.loads(out)
    assert code == 1 and result["is_error"] and "--max-turns 2" in result["result"]
    assert len(server.requests) == 2


async def test_stream_json_events(server, make_settings, api: str) -> None:
    server.script(
        reply(tool_calls=[tool_call("ls", {"path": "."})]), reply("Listed.", chunk_size=2)
    )
    code, out, _ = await headless(make_settings(api), "list", OutputFormat.STREAM_JSON)
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    types = [e["type"] for e in events]
    assert (
        types[:2] == ["init", "turn_started"]
        and types[-2] == "turn_finished"
        and types[-1] == "result"
    )
    assert (
        "tool_call_started" in types and "tool_call_finished" in types and "usage_updated" in types
    )
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert text == "Listed."
    assert types.count("text_delta") >= 3


async def test_runner_events_with_interactive_approver(
    server, make_settings, workspace: Path, api: str
) -> None:
    from dcode.agent.approval import ApprovalDecision
    from dcode.agent.engine import Engine

    asked: list[ApprovalRequested] = []

    class Yes:
        async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
            asked.append(request)
            return ApprovalDecision(True, remember=True)

    server.script(
        reply(tool_calls=[tool_call("write_file", {"file_path": "a.txt", "content": "one\n"})]),
        reply(tool_calls=[tool_call("write_file", {"file_path": "b.txt", "content": "two\n"})]),
        reply("done"),
    )
    settings = make_settings(api)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(Yes(), mode=ApprovalMode.MANUAL)
        events = [event async for event in runner.run_turn("write two files")]
    assert len(asked) == 1 and asked[0].tool == "write_file" and "+one" in asked[0].diff
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.result.status for e in finished] == [ToolStatus.OK, ToolStatus.OK]
    assert (workspace / "b.txt").read_text() == "two\n"
    assert isinstance(events[-1], TurnFinished) and not events[-1].is_error


async def test_reasoning_reaches_the_event_stream(server, make_settings, api: str) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import ReasoningDelta, TextDelta

    server.script(reply("The result.", reasoning="First I consider the question."))
    async with await Engine.open(make_settings(api)) as engine:
        events = [e async for e in engine.runner(HeadlessApprover()).run_turn("think")]
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert thought == "First I consider the question."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The result."


async def test_write_todos_updates_the_plan(server, make_settings, api: str) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine

    todos = [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"},
    ]
    server.script(reply(tool_calls=[tool_call("write_todos", {"todos": todos})]), reply("planned"))
    async with await Engine.open(make_settings(api)) as engine:
        runner = engine.runner(HeadlessApprover())
        events = [e async for e in runner.run_turn("plan it")]
        state = await engine.graph.aget_state(runner.config)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].name == "write_todos" and finished[0].result.status is ToolStatus.OK
    assert [t["content"] for t in state.values["todos"]] == ["read the code", "fix the bug"]
    assert "write_todos" in server.requests[0].tool_names


async def test_the_end_of_the_model_stream_is_announced_before_the_message(
    server, make_settings, api: str
) -> None:
    """``model_stream_ended`` comes after the last text and before the recorded message, once per step."""
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import AssistantMessageFinished, ModelStreamEnded, TextDelta

    server.script(
        reply(tool_calls=[tool_call("ls", {"path": "."})]), reply("All listed.", chunk_size=3)
    )
    async with await Engine.open(make_settings(api)) as engine:
        events = [e async for e in engine.runner(HeadlessApprover()).run_turn("list")]
    kinds = [
        type(e)
        for e in events
        if isinstance(e, (TextDelta, ModelStreamEnded, AssistantMessageFinished))
    ]
    ended = [i for i, kind in enumerate(kinds) if kind is ModelStreamEnded]
    finished = [i for i, kind in enumerate(kinds) if kind is AssistantMessageFinished]
    assert len(ended) == len(finished) == 2
    assert all(e < f for e, f in zip(ended, finished, strict=True))
    last_text = max(i for i, kind in enumerate(kinds) if kind is TextDelta)
    assert last_text < ended[1]


def test_engines_in_successive_event_loops_share_no_connections(server, make_settings) -> None:
    """Each engine owns its HTTP pool: a second event loop talking to the same server (the same
    base URL) never picks up a connection that belonged to the first, closed loop."""
    import asyncio

    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import ErrorEvent, TurnFinished

    async def one_turn(prompt: str) -> list:
        async with await Engine.open(make_settings("chat", max_retries=0)) as engine:
            return [e async for e in engine.runner(HeadlessApprover()).run_turn(prompt)]

    server.script(reply("first loop"), reply("second loop"))
    for prompt in ("one", "two"):
        events = asyncio.run(one_turn(prompt))
        assert not [e for e in events if isinstance(e, ErrorEvent)], events
        assert isinstance(events[-1], TurnFinished) and not events[-1].is_error
    assert [r.transcript()[-1] for r in server.requests] == [("user", "one"), ("user", "two")]
