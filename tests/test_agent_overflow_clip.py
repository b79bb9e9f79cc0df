"""Compaction, tier 3: a context overflow clips the trailing tool results and retries once."""

from __future__ import annotations

import io
import json
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.agent.large_results import RESULTS_DIR, preview
from dcode.agent.middleware.overflow_clip import READ_HEAD_CHARS, clip_trailing_results
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.context.tokens.counter import TokenCounter
from tests.support.model_server import fault, reply, tool_call

COUNTER = TokenCounter("gpt-4o")
BIG = "".join(f"line {n}: {'y' * 90}\n" for n in range(1, 1_001))  # ~100,000 characters


def batch(*calls: tuple[str, str, dict]) -> list:
    """A prompt, one AI message with these (name, id, args) calls, and a big result for each."""
    ai = AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": call_id, "type": "tool_call"}
            for name, call_id, args in calls
        ],
    )
    return [
        HumanMessage(content="go"),
        ai,
        *(ToolMessage(content=BIG, tool_call_id=call_id) for _, call_id, _ in calls),
    ]


def test_the_preview_shows_the_first_and_last_lines_numbered() -> None:
    shown = preview("".join(f"row {n}\n" for n in range(1, 31)))
    assert shown.splitlines()[0] == "     1\trow 1" and shown.splitlines()[-1] == "    30\trow 30"
    assert "... [20 lines truncated] ..." in shown
    assert preview("a\nb") == "     1\ta\n     2\tb"


def test_read_results_keep_their_head_and_others_are_written_out(tmp_path: Path) -> None:
    messages = batch(
        ("read_file", "call_a", {"file_path": "src/big.py"}),
        ("execute", "call.b/1", {"command": "cat log"}),
    )
    out = clip_trailing_results(messages, threshold=1_000, directory=tmp_path, counter=COUNTER)
    assert out is not None and out[:2] == messages[:2]
    read, shell = out[2].content, out[3].content
    assert (
        read.startswith(BIG[:READ_HEAD_CHARS])
        and "The whole file is at src/big.py" in read
        and len(read) < 5_000
    )
    saved = tmp_path / "session" / "call_b_1"  # the id made safe as a file name, outside a run
    assert (
        saved.read_text() == BIG
        and str(saved) in shell
        and "line 1000:" in shell
        and len(shell) < 2_000
    )
    assert messages[2].content == BIG  # the originals are untouched


def test_small_results_or_no_trailing_results_are_not_clipped(tmp_path: Path) -> None:
    messages = batch(("read_file", "call_a", {"file_path": "a"}))
    assert (
        clip_trailing_results(messages, threshold=1_000_000, directory=tmp_path, counter=COUNTER)
        is None
    )
    assert (
        clip_trailing_results(
            [*messages, AIMessage(content="done")], threshold=1, directory=tmp_path, counter=COUNTER
        )
        is None
    )
    short = [*messages, ToolMessage(content="denied", tool_call_id="call_x")]
    out = clip_trailing_results(short, threshold=1_000, directory=tmp_path, counter=COUNTER)
    assert (
        out is not None and out[-1] is short[-1] and list(tmp_path.iterdir()) == []
    )  # nothing written for it


async def run(settings, prompt: str) -> tuple[int, list[dict]]:  # the make_settings fixture's
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings,
        HeadlessRequest(prompt=prompt, output_format=OutputFormat.STREAM_JSON),
        out=out,
        err=err,
    )
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


async def test_an_overflow_after_a_big_read_is_clipped_and_retried(
    server, make_settings, workspace: Path, dcode_home: Path, api: str
) -> None:
    (workspace / "big.log").write_text(BIG)
    server.script(
        reply(
            tool_calls=[
                tool_call("read_file", {"file_path": "big.log"}),
                tool_call("grep", {"pattern": "line", "path": "big.log"}),
            ]
        ),
        fault.context_length_exceeded(),
        reply("The log repeats one line."),
    )
    settings = make_settings(
        api, model_overrides={"openai:test-model": {"max_input_tokens": 128_000}}
    )
    code, events = await run(settings, "what is in big.log?")
    assert code == 0 and events[-1]["result"] == "The log repeats one line."
    assert any(
        e.get("type") == "notice" and "overflowed the context window" in e["message"]
        for e in events
    )
    sent_whole = [text for role, text in server.transcript(1) if role == "tool"]
    tool_texts = [text for role, text in server.transcript(2) if role == "tool"]
    assert len(tool_texts) == 2 and all(len(text) < 8_000 for text in tool_texts)
    assert all(len(text) > 30_000 for text in sent_whole)  # what overflowed
    assert "read_file's offset and limit" in tool_texts[0]
    [saved] = (path for path in (dcode_home / RESULTS_DIR).rglob("*") if path.is_file())
    assert saved.read_text() == sent_whole[1] and str(saved) in tool_texts[1]  # grep's whole output


async def test_a_second_overflow_is_the_error_the_user_sees(
    server, make_settings, workspace: Path
) -> None:
    (workspace / "big.log").write_text(BIG)
    server.script(
        reply(tool_calls=[tool_call("read_file", {"file_path": "big.log"})]),
        fault.context_length_exceeded(repeat=True),
    )
    code, events = await run(
        make_settings(model_overrides={"openai:test-model": {"max_input_tokens": 128_000}}),
        "read it",
    )
    assert code != 0
    assert len(server.requests) == 3  # the first call, the overflow, the one retry
    assert "context window" in json.dumps(events[-1])
