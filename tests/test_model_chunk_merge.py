"""The final message of a stream is merged without copying its arguments once per delta.

Also the contract with langchain-core that ``dcode/models/chunk_merge.py`` relies on: a streamed
call's chunks are merged as ``first + list(rest)``, and grouping that merge changes nothing.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from langchain_core.language_models import chat_models
from langchain_core.messages import HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.utils import _merge

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.models.chat_model import DcodeChatOpenAI
from dcode.models.chunk_merge import FANOUT, BalancedMergeChunk
from dcode.settings.config import ApprovalMode
from tests.support.model_server import reply, tool_call

CONTRACT = (
    "langchain-core no longer merges a streamed answer as first + list(rest), so "
    "dcode/models/chunk_merge.py no longer applies: check how it merges now and what it costs"
)


def plain_model(server, api: str) -> DcodeChatOpenAI:
    """dcode's chat model on langchain's default HTTP client: every wire delta is one chunk."""
    return DcodeChatOpenAI(
        model="test-model",
        base_url=server.base_url,
        api_key="test",
        use_responses_api=api == "responses",
        streaming=True,
        stream_usage=True,
        max_retries=0,
    )


async def stream_chunks(server, api: str, step) -> list[ChatGenerationChunk]:
    server.script(step)
    model = plain_model(server, api)
    return [chunk async for chunk in model._astream([HumanMessage("go")])]


def rich_answer(chunk_size: int):
    calls = [
        tool_call("write_file", {"file_path": "a.py", "content": "print('a')\n" * 40}),
        tool_call(
            "edit_file", {"file_path": "b.py", "old_string": "x = 1", "new_string": "x = 2 ✓"}
        ),
    ]
    return reply(
        "I will write a.py and edit b.py.",
        reasoning="Two files need changes.",
        tool_calls=calls,
        chunk_size=chunk_size,
    )


async def test_grouped_merge_equals_langchains_merge(server, api: str) -> None:
    chunks = await stream_chunks(server, api, rich_answer(2))
    assert len(chunks) > 3 * FANOUT
    flat = ChatGenerationChunk.__add__(
        ChatGenerationChunk(message=chunks[0].message, generation_info=chunks[0].generation_info),
        chunks[1:],
    )
    grouped = chunks[0] + chunks[1:]
    assert grouped.message == flat.message
    assert grouped.generation_info == flat.generation_info
    assert (
        grouped.message.tool_calls == flat.message.tool_calls and len(flat.message.tool_calls) == 2
    )


async def test_a_stream_is_merged_through_its_first_chunk(
    server, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    heads: list[int] = []
    original = BalancedMergeChunk.__add__

    def counting(self: BalancedMergeChunk, other: Any) -> ChatGenerationChunk:
        if isinstance(other, list):
            heads.append(len(other))
        return original(self, other)

    monkeypatch.setattr(BalancedMergeChunk, "__add__", counting)
    server.script(rich_answer(3))
    message = await plain_model(server, api).ainvoke([HumanMessage("go")])
    assert len(message.tool_calls) == 2
    assert len(heads) == 1 and heads[0] > FANOUT, CONTRACT
    first = BalancedMergeChunk.adopt(ChatGenerationChunk(message=message_chunk("a")))
    chat_models.generate_from_stream(
        iter([first, *(ChatGenerationChunk(message=message_chunk("b")) for _ in range(FANOUT))])
    )
    assert heads[-1] == FANOUT, CONTRACT


async def test_the_agent_graph_merges_through_the_first_chunk(
    server, make_settings, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph's ``messages`` stream must not switch the model to another accumulator."""
    heads: list[int] = []
    original = BalancedMergeChunk.__add__

    def counting(self: BalancedMergeChunk, other: Any) -> ChatGenerationChunk:
        if isinstance(other, list):
            heads.append(len(other))
        return original(self, other)

    monkeypatch.setattr(BalancedMergeChunk, "__add__", counting)
    server.script(rich_answer(3), reply("done"))
    out, err = io.StringIO(), io.StringIO()
    settings = make_settings(api, approve=ApprovalMode.ALL)
    code = await run_headless(
        settings, HeadlessRequest(prompt="go", output_format=OutputFormat.TEXT), out=out, err=err
    )
    assert code == 0, err.getvalue()
    assert len(heads) == 2, CONTRACT  # one merge per model call


def message_chunk(args: str) -> Any:
    from langchain_core.messages import AIMessageChunk

    return AIMessageChunk(
        content="",
        tool_call_chunks=[
            {"name": None, "args": args, "id": None, "index": 0, "type": "tool_call_chunk"}
        ],
    )


async def test_each_argument_byte_is_copied_a_bounded_number_of_times(
    server, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = "0123456789abcdef\n" * 3_000
    step = reply(
        tool_calls=[tool_call("write_file", {"file_path": "big.txt", "content": content})],
        chunk_size=9,
    )
    chunks = await stream_chunks(server, api, step)
    assert len(chunks) > 5_000
    copied = 0
    merge_dicts = _merge.merge_dicts

    def measuring(left: dict[str, Any], *others: dict[str, Any]) -> dict[str, Any]:
        nonlocal copied
        for right in others:
            copied += sum(
                len(v)
                for k, v in left.items()
                if isinstance(v, str) and isinstance(right.get(k), str)
            )
        return merge_dicts(left, *others)

    monkeypatch.setattr(_merge, "merge_dicts", measuring)
    result = chat_models.generate_from_stream(iter(chunks))
    assert result.generations[0].message.tool_calls[0]["args"]["content"] == content
    # A flat merge copies the growing string once per delta, len² / 18 characters here (twice
    # that on the Responses wire, whose content blocks carry the arguments too): 2,800 × len.
    # Grouped by FANOUT = 64, each level copies each character about 32 times.
    assert copied < 300 * len(content)
