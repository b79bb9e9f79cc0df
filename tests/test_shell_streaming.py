"""A shell command's output while it runs: the backend hands it out as it arrives, the
``execute`` tool puts out its last lines as ``tool_output`` events (throttled), and they reach
the session's stream, a subagent's too, and ``stream-json``."""

from __future__ import annotations

import asyncio
import io
import json
import random
import time
from pathlib import Path

from dcode.agent.approval import HeadlessApprover
from dcode.agent.backends.capture import OutputTail
from dcode.agent.backends.local import LocalBackend
from dcode.agent.engine import Engine
from dcode.agent.events import Event, ToolCallFinished, ToolOutputTail
from dcode.agent.tools.factory import CallSite
from dcode.agent.tools.live_output import INTERVAL_S, LiveOutput
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.settings.config import ApprovalMode
from tests.support.model_server import reply, tool_call

# A line every 0.2 s for 2 s: a command a person would want to watch.
TICKING = "for i in $(seq 1 10); do echo line $i; sleep 0.2; done"


async def test_the_backend_hands_out_output_before_the_command_ends(tmp_path: Path) -> None:
    pieces: list[str] = []
    result = await LocalBackend(tmp_path).execute(
        "echo first; sleep 0.5; echo second", on_output=pieces.append
    )
    assert "".join(pieces) == result.output == "first\nsecond\n"
    assert pieces[0] == "first\n"  # on its own: it came while the command still slept


async def test_a_failing_sink_never_ends_the_command(tmp_path: Path) -> None:
    calls = 0

    def broken(text: str) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("the screen is gone")

    result = await LocalBackend(tmp_path).execute("echo a; sleep 0.2; echo b", on_output=broken)
    assert result.output == "a\nb\n" and result.exit_code == 0
    assert calls == 1  # dropped after its first failure


def test_the_tail_is_what_a_terminal_would_leave() -> None:
    tail = OutputTail(lines=3, line_chars=12)
    tail.add("one\r\ntwo\nthr")
    tail.add("ee\r")  # the "\n" of a "\r\n" is still on its way
    assert tail.text() == "one\ntwo\nthree" and tail.lines == 3
    tail.add("\n 10%\r 50%\r100%")  # a progress bar is one line
    assert tail.text() == "two\nthree\n100%" and tail.lines == 4
    tail.add("\n" + "x" * 10_000 + "\n")  # a long line is cut, and memory stays bounded
    assert tail.text().split("\n")[-1] == "x" * 12 and tail.lines == 5
    raw = OutputTail()
    raw.add("\x1b]0;title\x07\x1b[2Jplain\n")  # kept as printed: the screen makes it safe
    assert raw.text() == "\x1b]0;title\x07\x1b[2Jplain"


def as_a_terminal_leaves_it(text: str, lines: int, width: int) -> tuple[str, int]:
    """The tail of ``text`` taken whole, line by line: what ``OutputTail`` must give however
    the text is cut into pieces."""
    rows = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        rows.append(line[line.rfind("\r") + 1 :][:width])
    shown = rows[:-1] + ([rows[-1]] if rows[-1] else [])
    return "\n".join(shown[-lines:]), len(shown)


def test_the_tail_does_not_depend_on_how_the_output_arrives() -> None:
    pick = random.Random(7)
    for _ in range(2000):
        text = "".join(
            pick.choice(["a", "bc", "\n", "\r", "wxyz", "\r\n", "\n\n\n\n"])
            for _ in range(pick.randint(0, 80))
        )
        tail, start = OutputTail(lines=3, line_chars=4), 0
        while start < len(text):
            end = start + pick.randint(1, 9)
            tail.add(text[start:end])
            start = end
        assert (tail.text(), tail.lines) == as_a_terminal_leaves_it(text, 3, 4), repr(text)


async def test_the_tail_is_sent_at_most_ten_times_a_second(tmp_path: Path) -> None:
    events: list[Event] = []
    pieces = 0
    live = LiveOutput(CallSite("call-1", events.append))

    def take(text: str) -> None:
        nonlocal pieces
        pieces += 1
        live.add(text)

    started = time.monotonic()
    # 200,000 lines, written over about a second.
    command = "for i in $(seq 1 20); do seq $((i*10000)) $((i*10000+9999)); sleep 0.05; done"
    async with live:
        result = await LocalBackend(tmp_path).execute(command, on_output=take)
    elapsed = time.monotonic() - started
    assert result.output.count("\n") == 200_000
    assert all(isinstance(e, ToolOutputTail) and e.call_id == "call-1" for e in events)
    assert 2 <= len(events) <= elapsed / INTERVAL_S + 2 < pieces
    assert [e.lines for e in events] == sorted(e.lines for e in events)
    assert all(len(e.tail.split("\n")) <= 5 for e in events)
    await asyncio.sleep(3 * INTERVAL_S)
    assert len(events) == live.sent  # nothing after the call ended


async def test_stream_json_carries_the_lines_while_the_command_runs(server, make_settings) -> None:
    server.script(reply(tool_calls=[tool_call("execute", {"command": TICKING})]), reply("Done."))
    out, err = io.StringIO(), io.StringIO()
    settings = make_settings(approve=ApprovalMode.ALL)
    code = await run_headless(
        settings,
        HeadlessRequest(prompt="count", output_format=OutputFormat.STREAM_JSON),
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    types = [line["type"] for line in lines]
    outputs = [line for line in lines if line["type"] == "tool_output"]
    assert len(outputs) >= 3
    assert types.index("tool_output") < types.index("tool_call_finished")
    assert max(i for i, t in enumerate(types) if t == "tool_output") < types.index(
        "tool_call_finished"
    )
    first = outputs[0]
    assert (
        first["tail"].startswith("line 1")
        and "line 10" not in first["tail"]
        and first["agent"] == []
    )
    assert [o["lines"] for o in outputs] == sorted(o["lines"] for o in outputs)
    finished = next(line for line in lines if line["type"] == "tool_call_finished")
    assert "line 10" in finished["output"] and first["call_id"] == finished["call_id"]


async def test_a_subagent_s_command_streams_under_its_path(server, make_settings) -> None:
    job = "Run the counter and say how far it got."
    server.script(
        reply(
            tool_calls=[tool_call("task", {"description": job, "subagent_type": "general-purpose"})]
        ).answering("count"),
        reply(tool_calls=[tool_call("execute", {"command": TICKING})]).answering(job),
        reply("It counted to 10.").answering(job),
        reply("The subagent counted to 10.").answering("count"),
    )
    async with await Engine.open(make_settings(approve=ApprovalMode.ALL)) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        events = [event async for event in runner.run_turn("count")]
    outputs = [e for e in events if isinstance(e, ToolOutputTail)]
    finished = [e for e in events if isinstance(e, ToolCallFinished) and e.agent == ("task:1",)]
    assert outputs and all(e.agent == ("task:1",) for e in outputs)
    assert {e.call_id for e in outputs} == {finished[0].call_id}
    assert events.index(outputs[-1]) < events.index(finished[0])
