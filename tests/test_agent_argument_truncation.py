"""Compaction, tier 1: old write/edit arguments cut in the request once the window fills."""

from __future__ import annotations

import io
import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.agent.compaction.thresholds import keep_from, reached
from dcode.agent.compaction.truncation import (
    HEAD_CHARS,
    MARKER,
    MAX_ARGUMENT_CHARS,
    truncate_arguments,
    truncated_history,
)
from dcode.agent.token_count import count_messages
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.context.tokens.counter import TokenCounter
from dcode.settings.compaction_triggers import Threshold, Triggers, Unit
from tests.support.model_server import RecordedRequest, reply, tool_call

LONG = "x" * (MAX_ARGUMENT_CHARS + 1)
COUNTER = TokenCounter("gpt-4o")


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": f"call_{name}", "type": "tool_call"}],
    )


def test_long_write_and_edit_arguments_are_cut_and_others_left() -> None:
    message = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "write_file",
                "args": {"file_path": "a.py", "content": LONG},
                "id": "1",
                "type": "tool_call",
            },
            {
                "name": "edit_file",
                "args": {"file_path": "b.py", "old_string": LONG, "new_string": "short"},
                "id": "2",
                "type": "tool_call",
            },
            {"name": "execute", "args": {"command": LONG}, "id": "3", "type": "tool_call"},
        ],
    )
    cut = truncate_arguments(message)
    write, edit, shell = (c["args"] for c in cut.tool_calls)  # type: ignore[attr-defined]
    assert write == {"file_path": "a.py", "content": LONG[:HEAD_CHARS] + MARKER}
    assert edit == {
        "file_path": "b.py",
        "old_string": LONG[:HEAD_CHARS] + MARKER,
        "new_string": "short",
    }
    assert shell == {"command": LONG}
    assert message.tool_calls[0]["args"]["content"] == LONG  # the original is untouched


def test_nothing_to_cut_returns_the_same_message() -> None:
    short = call("write_file", file_path="a.py", content="x" * MAX_ARGUMENT_CHARS)
    assert truncate_arguments(short) is short
    prompt = HumanMessage(content=LONG)
    assert truncate_arguments(prompt) is prompt  # only the model's calls are cut


def test_below_the_trigger_or_inside_the_keep_window_nothing_changes() -> None:
    history = [
        HumanMessage(content="write it"),
        call("write_file", file_path="a.py", content=LONG),
        ToolMessage(content="ok", tool_call_id="call_write_file"),
    ]
    defaults = Triggers()
    assert truncated_history(history, 100_000, defaults) is None  # far below 70 % of the window
    # A window this small is over the trigger, but keeps only the tool result whole.
    out = truncated_history(history, 600, defaults)
    assert out is not None and out[1].tool_calls[0]["args"]["content"].endswith(MARKER)  # type: ignore[attr-defined]
    assert out[0] is history[0] and out[2] is history[2]
    assert (
        keep_from(Threshold(Unit.TOKENS, 1_000_000), history, 600) == 0
    )  # everything fits: nothing is old


def test_tier_one_fires_below_tier_two_and_by_any_unit() -> None:
    history = [
        HumanMessage(content="write it"),
        call("write_file", file_path="a.py", content=LONG),
        ToolMessage(content="ok", tool_call_id="call_write_file"),
    ]
    tokens = count_messages(history)
    window = int(
        tokens / 0.75
    )  # the history is 75 % of the window: past tier 1 (70 %), short of tier 2 (85 %)
    assert truncated_history(history, window, Triggers()) is not None
    assert not reached(Triggers().summarize_at, history, window)
    by_messages = Triggers(
        truncate_at=Threshold.parse("3 messages"), keep=Threshold.parse("1 message")
    )
    assert (
        truncated_history(history, 10**9, by_messages) is not None
    )  # three messages, whatever the window
    assert (
        truncated_history(history, 10**9, Triggers(truncate_at=Threshold.parse("4 messages")))
        is None
    )
    by_tokens = Triggers(truncate_at=Threshold.parse(tokens), keep=Threshold.parse(1))
    assert (
        truncated_history(history, 10**9, by_tokens) is not None
        and truncated_history(history, 10**9, Triggers(truncate_at=Threshold.parse(tokens + 1)))
        is None
    )


def written_arguments(request: RecordedRequest) -> list[dict[str, Any]]:
    """The arguments of every write_file call the request carried, on either wire."""
    found = []
    if request.wire == "responses":
        items = [
            item
            for item in request.body["input"]
            if isinstance(item, dict) and item.get("type") == "function_call"
        ]
        found = [json.loads(item["arguments"]) for item in items if item["name"] == "write_file"]
    else:
        for message in request.body["messages"]:
            for c in message.get("tool_calls") or []:
                if c["function"]["name"] == "write_file":
                    found.append(json.loads(c["function"]["arguments"]))
    return found


async def test_the_request_carries_the_cut_arguments_and_the_session_keeps_them_whole(
    server, make_settings, workspace, api: str
) -> None:
    content = "print('hello')\n" * 1_000  # 15,000 characters, ~3,750 tokens
    server.script(
        reply(tool_calls=[tool_call("write_file", {"file_path": "big.py", "content": content})]),
        reply("Written."),
    )
    settings = make_settings(
        api, model_overrides={"openai:test-model": {"max_input_tokens": 4_000}}
    )
    out = io.StringIO()
    code = await run_headless(
        settings,
        HeadlessRequest(prompt="write big.py", output_format=OutputFormat.JSON),
        out=out,
        err=io.StringIO(),
    )
    assert code == 0 and (workspace / "big.py").read_text() == content
    [sent] = written_arguments(server.requests[1])
    assert sent == {"file_path": "big.py", "content": content[:HEAD_CHARS] + MARKER}
    # The checkpointed history still holds the whole argument.
    from dcode.agent.engine import Engine

    async with await Engine.open(settings) as engine:
        messages = await engine.runner(
            None, session_id=json.loads(out.getvalue())["session_id"]
        ).messages()  # type: ignore[arg-type]
    assert [
        m.tool_calls[0]["args"]["content"] for m in messages if getattr(m, "tool_calls", None)
    ] == [content]
