"""Tests of the scripted model server, driven by the real ChatOpenAI client.

The server is only useful if the real client parses what it sends, so every
behaviour is checked through ``langchain_openai.ChatOpenAI`` on both wires
(Chat Completions and the Responses API), streamed and not.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_openai import ChatOpenAI

from tests.support.http_clients import closes_http_clients, own_http_client  # noqa: F401 - the fixture closes them
from tests.support.model_server import (
    ModelServerProcess,
    RecordedRequest,
    ScriptedModelServer,
    Step,
    fault,
    load_script,
    read_request_log,
    reply,
    steps_from_json,
    steps_to_json,
    tool_call,
    wait_for_port_file,
    write_script,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
WIRES = [pytest.param(False, id="chat"), pytest.param(True, id="responses")]
TIMEOUT = 10.0


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    """A fresh server per test, so scripts and recorded requests never leak."""
    with ScriptedModelServer() as running:
        yield running


def make_llm(
    server: ScriptedModelServer,
    responses: bool,
    *,
    streaming: bool = False,
    max_retries: int = 0,
    timeout: float | None = None,
) -> ChatOpenAI:
    """ChatOpenAI pointed at the scripted server, configured as dcode configures it."""
    return ChatOpenAI(
        model="test-model",
        base_url=server.base_url,
        api_key="test",
        http_async_client=own_http_client(),
        use_responses_api=responses,
        max_retries=max_retries,
        streaming=streaming,
        stream_usage=True,
        timeout=timeout,
    )


async def collect(llm: ChatOpenAI, prompt: Any = "hi") -> list[AIMessageChunk]:
    """All chunks of one streamed answer, bounded so a broken stream cannot hang."""

    async def run() -> list[AIMessageChunk]:
        return [chunk async for chunk in llm.astream(prompt)]

    return await asyncio.wait_for(run(), TIMEOUT)


def merged(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    """Aggregate stream chunks the way LangChain does."""
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


def reasoning_texts(message: AIMessage) -> list[str]:
    """Summary texts of the Responses-style reasoning blocks in a message."""
    return [
        part["text"]
        for block in message.content
        if isinstance(block, dict) and block.get("type") == "reasoning"
        for part in block.get("summary", [])
    ]


# ---------------------------------------------------------------- answers


@pytest.mark.parametrize("responses", WIRES)
async def test_text_answer_streamed(server: ScriptedModelServer, responses: bool) -> None:
    server.script(reply("Hello there, friend!"))
    chunks = await collect(make_llm(server, responses, streaming=True))
    assert len([c for c in chunks if c.text]) >= 3
    message = merged(chunks)
    assert message.text == "Hello there, friend!"
    assert message.usage_metadata is not None
    assert message.usage_metadata["output_tokens"] > 0
    assert server.requests[0].stream
    assert server.requests[0].wire == ("responses" if responses else "chat")


async def test_a_server_not_keeping_bodies_keeps_each_requests_times_and_step(
    server: ScriptedModelServer,
) -> None:
    # A benchmark of thousands of requests keeps what it measures by, not every history sent.
    server.keep_bodies = False
    first, second = reply("one"), reply("two")
    server.script(first, second)
    llm = make_llm(server, False, streaming=True)
    assert merged(await collect(llm, "a" * 50_000)).text == "one"
    assert merged(await collect(llm, "b")).text == "two"
    kept = server.requests
    assert [r.body for r in kept] == [None, None] and [r.raw_body for r in kept] == [b"", b""]
    assert [r.step for r in kept] == [first, second] and [r.index for r in kept] == [0, 1]
    assert [r.index for r in server.all_requests if r.index >= 0] == [0, 1] and all(
        r.body is None for r in server.all_requests
    )
    deadline = time.monotonic() + 5  # the server notes an answer's time just after sending it
    while len(server.answered) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    answered = dict(server.answered)
    assert kept[0].received_at <= answered[0] <= kept[1].received_at <= answered[1]


@pytest.mark.parametrize("responses", WIRES)
async def test_text_answer_not_streamed(server: ScriptedModelServer, responses: bool) -> None:
    server.script(reply("Hello!", usage=(120, 7)))
    message = await make_llm(server, responses).ainvoke("hi")
    assert message.text == "Hello!"
    assert message.usage_metadata is not None
    assert message.usage_metadata["input_tokens"] == 120
    assert message.usage_metadata["output_tokens"] == 7
    assert message.usage_metadata["total_tokens"] == 127
    assert not server.requests[0].stream
    assert server.remaining == []


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("responses", WIRES)
async def test_parallel_tool_calls(
    server: ScriptedModelServer, responses: bool, streaming: bool
) -> None:
    write_args = {"file_path": "a.txt", "content": "hi there, this is long"}
    calls = [tool_call("write_file", write_args), tool_call("ls", {"path": "."})]
    server.script(reply("Let me do both.", tool_calls=calls))
    llm = make_llm(server, responses, streaming=streaming)
    message = await asyncio.wait_for(llm.ainvoke("go"), TIMEOUT)
    assert message.tool_calls == [
        {"name": "write_file", "args": write_args, "id": "call_1", "type": "tool_call"},
        {"name": "ls", "args": {"path": "."}, "id": "call_2", "type": "tool_call"},
    ]
    assert message.text == "Let me do both."
    assert message.usage_metadata is not None


@pytest.mark.parametrize("responses", WIRES)
async def test_tool_arguments_arrive_in_fragments(
    server: ScriptedModelServer, responses: bool
) -> None:
    calls = [tool_call("ls", {"path": "src/deep/dir"}), tool_call("ls", {"path": "."})]
    server.script(reply(tool_calls=calls))
    chunks = await collect(make_llm(server, responses, streaming=True))
    fragments = [tc for c in chunks for tc in c.tool_call_chunks if tc.get("args")]
    assert len(fragments) >= 4  # several fragments for each of the two calls
    assert merged(chunks).tool_calls[0]["args"] == {"path": "src/deep/dir"}
    assert [tc["id"] for tc in merged(chunks).tool_calls] == ["call_1", "call_2"]


async def test_tool_call_ids_are_unique_across_requests(server: ScriptedModelServer) -> None:
    server.script(
        reply(tool_calls=[tool_call("ls")]),
        reply(tool_calls=[tool_call("ls"), tool_call("ls")]),
    )
    llm = make_llm(server, False)
    first = await llm.ainvoke("a")
    second = await llm.ainvoke("b")
    ids = [tc["id"] for tc in first.tool_calls + second.tool_calls]
    assert ids == ["call_1", "call_2", "call_3"]


@pytest.mark.parametrize("responses", WIRES)
async def test_usage_is_estimated_from_request_size(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(reply("short"), reply("short"))
    llm = make_llm(server, responses)
    small = await llm.ainvoke("hi")
    large = await llm.ainvoke("hi " * 400)
    assert small.usage_metadata and large.usage_metadata
    assert 0 < small.usage_metadata["input_tokens"] < large.usage_metadata["input_tokens"]
    assert large.usage_metadata["input_tokens"] >= 300
    assert small.usage_metadata["total_tokens"] == (
        small.usage_metadata["input_tokens"] + small.usage_metadata["output_tokens"]
    )


def test_sync_client_works(server: ScriptedModelServer) -> None:
    server.script(reply("sync hello"), reply("sync stream"))
    assert make_llm(server, False).invoke("hi").text == "sync hello"
    chunks = list(make_llm(server, True, streaming=True).stream("hi"))
    assert merged(chunks).text == "sync stream"


@pytest.mark.parametrize("responses", WIRES)
async def test_slow_stream_yields_several_spaced_chunks(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(reply("slow answer", chunk_delay=0.05, chunk_size=3))
    arrivals: list[tuple[float, str]] = []
    async for chunk in make_llm(server, responses, streaming=True).astream("hi"):
        if chunk.text:
            arrivals.append((time.monotonic(), chunk.text))
    assert [text for _, text in arrivals] == ["slo", "w a", "nsw", "er"]
    assert arrivals[-1][0] - arrivals[0][0] >= 0.1  # really streamed, not buffered


@pytest.mark.parametrize("responses", WIRES)
async def test_finish_reason_length(server: ScriptedModelServer, responses: bool) -> None:
    server.script(reply("cut", finish_reason="length"))
    message = await make_llm(server, responses).ainvoke("hi")
    if responses:
        assert message.response_metadata["status"] == "incomplete"
        assert message.response_metadata["incomplete_details"] == {"reason": "max_output_tokens"}
    else:
        assert message.response_metadata["finish_reason"] == "length"


# ---------------------------------------------------------------- reasoning


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
async def test_reasoning_on_responses_is_a_summary_block(
    server: ScriptedModelServer, streaming: bool
) -> None:
    server.script(reply("answer", reasoning="thinking about it"))
    message = await make_llm(server, True, streaming=streaming).ainvoke("hi")
    assert reasoning_texts(message) == ["thinking about it"]
    assert message.text == "answer"
    assert message.usage_metadata is not None
    assert message.usage_metadata["output_token_details"]["reasoning"] > 0


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
async def test_reasoning_content_on_chat_is_dropped_by_chatopenai(
    server: ScriptedModelServer, streaming: bool
) -> None:
    """ChatOpenAI ignores DeepSeek's ``reasoning_content``; the raw SDK still sees it."""
    server.script(reply("answer", reasoning="thinking about it"))
    message = await make_llm(server, False, streaming=streaming).ainvoke("hi")
    assert message.text == "answer"
    assert "reasoning_content" not in message.additional_kwargs
    assert reasoning_texts(message) == []


async def test_reasoning_content_reaches_the_raw_sdk(server: ScriptedModelServer) -> None:
    server.script(reply("answer", reasoning="deep thought").times(2))
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    stream = await client.chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    pieces = [
        (chunk.choices[0].delta.model_extra or {}).get("reasoning_content")
        async for chunk in stream
        if chunk.choices
    ]
    assert "".join(p for p in pieces if p) == "deep thought"
    completion = await client.chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert (completion.choices[0].message.model_extra or {})["reasoning_content"] == "deep thought"
    await client.close()


# ---------------------------------------------------------------- faults


@pytest.mark.parametrize("responses", WIRES)
async def test_429_with_retry_after_is_retried_by_the_client(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(fault.status(429, retry_after=0.2), reply("after the wait"))
    message = await make_llm(server, responses, streaming=True, max_retries=2).ainvoke("hi")
    assert message.text == "after the wait"
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.2
    assert second.headers["x-stainless-retry-count"] == "1"
    assert second.body == first.body


@pytest.mark.parametrize("responses", WIRES)
async def test_persistent_500_raises_after_retries(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(fault.status(500, retry_after=0.05).forever())
    with pytest.raises(openai.InternalServerError) as caught:
        await make_llm(server, responses, max_retries=2).ainvoke("hi")
    assert caught.value.status_code == 500
    assert caught.value.type == "server_error"
    assert "Sorry about that" in caught.value.message
    assert len(server.requests) == 3  # first try + 2 retries
    assert len(server.remaining) == 1  # a forever step is never used up


async def test_times_repeats_a_step_then_moves_on(server: ScriptedModelServer) -> None:
    server.script(fault.status(503, retry_after=0.01).times(2), reply("finally"))
    message = await make_llm(server, False, max_retries=2).ainvoke("hi")
    assert message.text == "finally"
    kinds = [type(r.step).__name__ for r in server.requests]
    assert kinds == ["StatusFault", "StatusFault", "Reply"]
    assert server.remaining == []


async def test_exhausted_script_fails_loudly_without_retries(server: ScriptedModelServer) -> None:
    started = time.monotonic()
    with pytest.raises(openai.InternalServerError, match="script exhausted"):
        await make_llm(server, False, max_retries=2).ainvoke("hi")
    assert len(server.requests) == 1  # x-should-retry: false stops the SDK's retry loop
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("responses", WIRES)
async def test_drop_mid_stream_raises_instead_of_hanging(
    server: ScriptedModelServer, responses: bool, streaming: bool
) -> None:
    server.script(fault.drop_mid_stream(after_chunks=3))
    llm = make_llm(server, responses, streaming=streaming)
    with pytest.raises(openai.APIConnectionError):
        await asyncio.wait_for(llm.ainvoke("hi"), TIMEOUT)


@pytest.mark.parametrize("responses", WIRES)
async def test_drop_after_some_text_was_streamed(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(fault.drop_mid_stream(after_chunks=6, text="partial words keep coming and then"))
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):  # noqa: PT012 - the cut comes mid-loop
        async with asyncio.timeout(TIMEOUT):
            async for chunk in make_llm(server, responses, streaming=True).astream("hi"):
                received.append(chunk.text)
    assert "".join(received)  # some text arrived before the cut


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("responses", WIRES)
async def test_malformed_chunk_raises(
    server: ScriptedModelServer, responses: bool, streaming: bool
) -> None:
    server.script(fault.malformed_chunk())
    llm = make_llm(server, responses, streaming=streaming)
    with pytest.raises(json.JSONDecodeError):  # not wrapped by the SDK nor by langchain
        await asyncio.wait_for(llm.ainvoke("hi"), TIMEOUT)


@pytest.mark.parametrize("responses", WIRES)
async def test_stall_before_headers_times_out_the_sdk(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(fault.stall_before_headers(20))
    llm = make_llm(server, responses, streaming=True, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        await asyncio.wait_for(llm.ainvoke("hi"), TIMEOUT)


@pytest.mark.parametrize("responses", WIRES)
async def test_stall_before_headers_then_answers(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(fault.stall_before_headers(0.3, text="sorry for the wait"))
    started = time.monotonic()
    message = await asyncio.wait_for(make_llm(server, responses).ainvoke("hi"), TIMEOUT)
    assert message.text == "sorry for the wait"
    assert time.monotonic() - started >= 0.3  # nothing came back before the stall was over


@pytest.mark.parametrize("responses", WIRES)
async def test_stall_mid_stream_pauses_after_some_chunks(
    server: ScriptedModelServer, responses: bool
) -> None:
    server.script(
        fault.stall_mid_stream(after_chunks=4, seconds=0.4, text="one two three four five six")
    )
    started = time.monotonic()
    chunks = await collect(make_llm(server, responses, streaming=True))
    assert "".join(chunk.text for chunk in chunks) == "one two three four five six"
    assert time.monotonic() - started >= 0.4  # the stream could not end before the silence did


@pytest.mark.parametrize("responses", WIRES)
async def test_context_length_exceeded(server: ScriptedModelServer, responses: bool) -> None:
    server.script(fault.context_length_exceeded(), fault.context_length_exceeded())
    for streaming in (False, True):
        with pytest.raises(openai.BadRequestError) as caught:
            await make_llm(server, responses, streaming=streaming, max_retries=2).ainvoke("hi")
        error = caught.value
        assert error.code == "context_length_exceeded"
        assert error.type == "invalid_request_error"
        assert "context" in error.message
        # openai 3.x puts only the message in str(error), so langchain-openai's
        # "context_length_exceeded" in str(e) test misses and it does NOT raise
        # its ContextOverflowError: callers must look at ``error.code``.
        assert not isinstance(error, ContextOverflowError)
    assert len(server.requests) == 2  # 400s are not retried


async def test_chat_context_message_reports_limit(server: ScriptedModelServer) -> None:
    server.script(fault.context_length_exceeded(limit=1000))
    with pytest.raises(openai.BadRequestError, match="maximum context length is 1000 tokens"):
        await make_llm(server, False).ainvoke("hi")


async def test_custom_status_and_headers(server: ScriptedModelServer) -> None:
    server.script(fault.status(401, headers={"x-extra": "1"}))
    with pytest.raises(openai.AuthenticationError) as caught:
        await make_llm(server, False, max_retries=2).ainvoke("hi")
    assert caught.value.code == "invalid_api_key"
    assert caught.value.response.headers["x-extra"] == "1"


# ---------------------------------------------------------------- recording


@pytest.mark.parametrize("responses", WIRES)
async def test_history_is_recorded(server: ScriptedModelServer, responses: bool) -> None:
    server.script(reply("done"))
    history = [
        SystemMessage("You are dcode."),
        HumanMessage("list files"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {"path": "."}, "id": "call_9"}]),
        ToolMessage("a.txt\nb.txt", tool_call_id="call_9"),
        HumanMessage("thanks"),
    ]
    await make_llm(server, responses).ainvoke(history)
    assert server.transcript(0) == [
        ("system", "You are dcode."),
        ("user", "list files"),
        ("tool_call", "ls"),
        ("tool", "a.txt\nb.txt"),
        ("user", "thanks"),
    ]
    assert len(server.messages(0)) >= 5
    assert server.requests[0].model == "test-model"
    assert server.requests[0].headers["authorization"] == "Bearer test"


async def test_tools_offered_are_recorded(server: ScriptedModelServer) -> None:
    def ls(path: str) -> str:
        """List a directory."""
        return path

    server.script(reply("ok"), reply("ok"))
    for responses in (False, True):
        await make_llm(server, responses).bind_tools([ls]).ainvoke("hi")
    assert [r.tool_names for r in server.requests] == [["ls"], ["ls"]]


async def test_models_endpoint(server: ScriptedModelServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    models = await client.models.list()
    assert [m.id for m in models.data] == ["test-model"]
    await client.close()
    assert server.requests == []  # listing models does not consume script steps
    assert [r.path for r in server.all_requests] == ["/v1/models"]


# ---------------------------------------------------------------- serialisation


def test_steps_round_trip_through_json() -> None:
    steps: list[Step] = [
        reply("Hello!"),
        reply(
            "x",
            tool_calls=[tool_call("write_file", {"file_path": "a.txt"}), tool_call("ls", "{bad")],
            usage=(120, 7),
            reasoning="hmm",
            chunk_delay=0.05,
            chunk_size=3,
        ),
        fault.status(429, retry_after=0.2),
        fault.status(500).times(5),
        fault.status(503, repeat=True),
        fault.drop_mid_stream(after_chunks=2),
        fault.malformed_chunk(),
        fault.context_length_exceeded(limit=8000),
        fault.stall_before_headers(2.5, text="late"),
        fault.stall_mid_stream(after_chunks=4, seconds=1.5, repeat=True),
    ]
    assert steps_from_json(steps_to_json(steps)) == steps
    assert [Step.from_dict(s.to_dict()) for s in steps] == steps
    assert fault.status(500).times(5).to_dict() == {"type": "status", "status": 500, "times": 5}
    assert steps_from_json([{"type": "reply", "text": "hi", "repeat": True}])[0].count is None


def test_unknown_step_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown step type"):
        steps_from_json('[{"type": "nope"}]')


# ---------------------------------------------------------------- subprocess mode


def test_subprocess_mode(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [reply("from another process", usage=(3, 4))])
    assert load_script(script) == [reply("from another process", usage=(3, 4))]
    port_file, log = tmp_path / "port", tmp_path / "requests.jsonl"
    command = [
        sys.executable,
        "-m",
        "tests.support.model_server",
        "--script",
        str(script),
        "--port-file",
        str(port_file),
        "--log",
        str(log),
    ]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
    try:
        base_url = wait_for_port_file(port_file, timeout=TIMEOUT, process=process)
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        llm = ChatOpenAI(model="test-model", base_url=base_url, api_key="test", max_retries=0)
        message = llm.invoke("hello")
        assert message.text == "from another process"
        assert message.usage_metadata and message.usage_metadata["total_tokens"] == 7
    finally:
        process.terminate()
        assert process.wait(timeout=5) == 0
    logged = read_request_log(log)
    assert len(logged) == 1
    assert isinstance(logged[0], RecordedRequest)
    assert logged[0].transcript() == [("user", "hello")]


async def test_model_server_process_helper(tmp_path: Path) -> None:
    with ModelServerProcess([reply("one")], workdir=tmp_path) as proc:
        llm = ChatOpenAI(
            model="test-model",
            base_url=proc.base_url,
            api_key="test",
            max_retries=0,
            use_responses_api=True,
            streaming=True,
        )
        assert (await llm.ainvoke("first")).text == "one"
        proc.script(reply("two"))
        assert (await llm.ainvoke("second")).text == "two"
        last_turns = [r.transcript()[-1] for r in proc.requests()]
        assert last_turns == [("user", "first"), ("user", "second")]
