"""The conversation reaches the wire unchanged, without the OpenAI SDK walking it per call."""

from __future__ import annotations

import cProfile
import pstats

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from dcode.models.chat_model import DcodeChatOpenAI
from dcode.models.history_payload import history_as_extra_body
from dcode.models.message_dicts import plain_content
from tests.support.http_clients import closes_http_clients, own_http_client  # noqa: F401
from tests.support.model_server import ScriptedModelServer, reply


def history(steps: int) -> list:
    messages: list = [
        SystemMessage("You are terse."),
        HumanMessage([{"type": "text", "text": "read them"}]),
    ]
    for n in range(steps):
        call = {"id": f"call_{n}", "name": "read_file", "args": {"file_path": f"notes/{n}.txt"}}
        messages.append(AIMessage("", tool_calls=[call], id=f"ai_{n}"))
        messages.append(
            ToolMessage(
                f"     1\tline {n} of the notes ünïcode ✓",
                tool_call_id=f"call_{n}",
                name="read_file",
            )
        )
    return messages


def with_plain_content(body: dict) -> dict:
    """A plain ``ChatOpenAI`` body as dcode sends it: Chat Completions messages whose parts are
    all text as one string, and no null content beside tool calls (``message_dicts.py``)."""
    if "messages" not in body:
        return body
    return {**body, "messages": [plain_content(message) for message in body["messages"]]}


def model(cls: type[ChatOpenAI], server: ScriptedModelServer, api: str) -> ChatOpenAI:
    return cls(
        model="test-model",
        base_url=server.base_url,
        api_key="k",
        streaming=True,
        use_responses_api=api == "responses",
        http_async_client=own_http_client(),
        max_retries=0,
    )


async def test_the_wire_body_is_the_conversation_sent_as_it_is(
    server: ScriptedModelServer, api: str
) -> None:
    server.script(reply("one"), reply("two"))
    messages = history(3)
    await model(ChatOpenAI, server, api).ainvoke(messages)
    await model(DcodeChatOpenAI, server, api).ainvoke(messages)
    plain, ours = (r.body for r in server.requests)
    key = "input" if api == "responses" else "messages"
    assert ours == with_plain_content(plain) and len(ours[key]) == len(plain[key]) >= 8
    assert "extra_body" not in ours


def test_extra_body_of_the_model_is_kept_and_the_conversation_moves_into_it() -> None:
    payload = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "extra_body": {"ttl": 300},
    }
    moved = history_as_extra_body(payload)
    assert moved == {
        "model": "m",
        "messages": [],
        "extra_body": {"ttl": 300, "messages": [{"role": "user", "content": "hi"}]},
    }
    responses = history_as_extra_body(
        {"model": "m", "input": [{"role": "user", "content": "hi"}], "extra_body": None}
    )
    assert responses == {"model": "m", "extra_body": {"input": [{"role": "user", "content": "hi"}]}}
    assert payload["messages"] == [
        {"role": "user", "content": "hi"}
    ]  # the caller's dict is left alone


async def _transform_calls(llm: ChatOpenAI, messages: list) -> int:
    profiler = cProfile.Profile()
    profiler.enable()
    await llm.ainvoke(messages)
    profiler.disable()
    stats = pstats.Stats(
        profiler
    ).stats  # {(file, line, name): (primitive calls, total calls, ...)}
    return sum(
        counts[1]
        for (file, _line, name), counts in stats.items()
        if "_transform" in name and "openai" in file
    )


async def test_the_sdk_does_not_walk_the_conversation(
    server: ScriptedModelServer, api: str
) -> None:
    server.script(reply("a"), reply("b"), reply("c"), reply("d"))
    short, long = history(2), history(60)
    plain = model(ChatOpenAI, server, api)
    assert (
        await _transform_calls(plain, long) > await _transform_calls(plain, short) + 500
    )  # what the walk costs
    ours = model(DcodeChatOpenAI, server, api)
    assert await _transform_calls(ours, long) == await _transform_calls(ours, short)
