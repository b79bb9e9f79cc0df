"""Chat Completions: a history's messages are converted to wire dicts once, and the body is
still the one plain ``ChatOpenAI`` sends, call after call, also after a message changes."""

from __future__ import annotations

import cProfile
import pstats

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from dcode.models.chat_model import DcodeChatOpenAI
from tests.support.http_clients import closes_http_clients, own_http_client  # noqa: F401
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_model_history_payload import history, model, with_plain_content


async def test_each_call_sends_what_chat_openai_sends(server: ScriptedModelServer) -> None:
    server.script(*(reply(str(n)) for n in range(6)))
    plain, ours = model(ChatOpenAI, server, "chat"), model(DcodeChatOpenAI, server, "chat")
    messages = history(3)
    bodies = []
    for step in range(3):
        if step == 1:
            messages += [
                AIMessage(
                    "", tool_calls=[{"id": "c9", "name": "ls", "args": {"path": "."}}], id="ai_9"
                ),
                ToolMessage("a\nb", tool_call_id="c9"),
            ]
        if step == 2:
            messages[3].content = "the answer, rewritten"  # a field given a new value
            messages[4] = messages[4].model_copy(update={"content": "a copy's content"})
        for llm in (plain, ours):
            await llm.ainvoke(messages)
        bodies.append((server.requests[-2].body, server.requests[-1].body))
    for want, got in bodies:
        assert got == with_plain_content(want)
    assert bodies[2][1]["messages"][3]["content"] == "the answer, rewritten"
    assert bodies[2][1]["messages"][4]["content"] == "a copy's content"


def _conversions(llm: ChatOpenAI, messages: list) -> tuple[int, list]:
    profiler = cProfile.Profile()
    profiler.enable()
    payload = llm._get_request_payload(messages)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    return sum(
        counts[1]
        for (_file, _line, name), counts in stats.items()
        if name == "_convert_message_to_dict"
    ), payload


def test_only_new_or_changed_messages_are_converted(server: ScriptedModelServer) -> None:
    ours = model(DcodeChatOpenAI, server, "chat")
    messages = history(40)
    first, _ = _conversions(ours, messages)
    assert first >= len(messages)
    messages.append(HumanMessage("one more"))
    again, payload = _conversions(
        ours, [SystemMessage("a new system message every call"), *messages[1:]]
    )
    assert again == 2  # the system message and the new one
    assert len(payload["extra_body"]["messages"]) == len(messages)
    # Each request has its own dicts: changing one body leaves the next as it was.
    payload["extra_body"]["messages"][5]["content"] = "changed downstream"
    _, later = _conversions(ours, messages)
    assert later["extra_body"]["messages"][5]["content"] != "changed downstream"


def test_the_responses_api_input_is_built_whole(server: ScriptedModelServer) -> None:
    ours, plain = (
        model(DcodeChatOpenAI, server, "responses"),
        model(ChatOpenAI, server, "responses"),
    )
    messages = history(5)
    ours._get_request_payload(messages)
    assert (
        ours._get_request_payload(messages)["extra_body"]["input"]
        == plain._get_request_payload(messages)["input"]
    )
