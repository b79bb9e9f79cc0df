"""A hung or broken model server ends the turn with one line that says what happened.

Each limit (connect, first byte, stall, retry budget) fires with small values through the real
client and graph, on both wires, with retries on, and its line names the setting to change.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from tests.support.model_server import fault, reply

TEST_DEADLINE = 30.0  # a regression hangs for minutes; the test fails long before


async def headless(settings, prompt: str = "hello") -> tuple[int, str, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    request = HeadlessRequest(prompt=prompt, output_format=OutputFormat.TEXT)
    code = await asyncio.wait_for(run_headless(settings, request, out=out, err=err), TEST_DEADLINE)
    return code, out.getvalue(), err.getvalue().strip().splitlines()


@contextmanager
def unanswered_listener() -> Iterator[str]:
    """A base URL whose connections are never accepted: the listen queue is full, so the
    kernel drops new SYNs and a client's connect waits until it gives up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        for sock in (*fillers, listener):
            sock.close()


async def test_first_byte_timeout_is_retried_then_named(server, make_settings, api: str) -> None:
    server.script(fault.stall_before_headers(20).times(2))
    settings = make_settings(api, request_timeout=0.3, max_retries=1, retry_budget=20)
    code, out, lines = await headless(settings)
    assert code == 1 and out == ""
    assert lines == [
        (
            f"dcode: error: the model server at {server.base_url} sent nothing for 0.3 s "
            "(first-byte timeout; set request_timeout or DCODE_REQUEST_TIMEOUT)"
        )
    ]
    assert len(server.requests) == 2  # the first try and one retry


async def test_retry_budget_caps_the_tries(server, make_settings, api: str) -> None:
    server.script(fault.stall_before_headers(20, repeat=True))
    settings = make_settings(api, request_timeout=0.3, max_retries=10, retry_budget=1.0)
    code, _, lines = await headless(settings)
    assert code == 1 and len(lines) == 1
    line = re.fullmatch(
        rf"dcode: error: gave up on the model server at {re.escape(server.base_url)} after 1 s and (\d+) tr(?:y|ies) "
        r"\(retry budget; set retry_budget or DCODE_RETRY_BUDGET\); the last try: nothing within 0\.3 s",
        lines[0],
    )
    assert line, lines[0]
    assert (
        1 <= len(server.requests) <= int(line[1]) < 11
    )  # ten retries were allowed; the budget stopped them


async def test_stall_mid_answer_is_named(server, make_settings, api: str) -> None:
    server.script(fault.stall_mid_stream(after_chunks=3, seconds=20))
    settings = make_settings(api, stall_timeout=0.3, max_retries=2)
    code, _, lines = await headless(settings)
    assert code == 1
    assert lines == [
        (
            f"dcode: error: the model server at {server.base_url} stopped sending mid-answer: nothing for 0.3 s "
            "(stall timeout; set stall_timeout or DCODE_STALL_TIMEOUT)"
        )
    ]
    assert len(server.requests) == 1


async def test_keepalive_comments_do_not_hold_a_stalled_answer(
    server, make_settings, api: str
) -> None:
    """A server that sends only ``: keepalive`` comments mid-answer has stalled all the same."""
    server.script(fault.stall_mid_stream(after_chunks=3, seconds=20, keepalive=0.1))
    settings = make_settings(api, stall_timeout=0.5, max_retries=2)
    code, _, lines = await headless(settings)
    assert code == 1
    assert lines == [
        (
            f"dcode: error: the model server at {server.base_url} stopped sending mid-answer: nothing for 0.5 s "
            "(stall timeout; set stall_timeout or DCODE_STALL_TIMEOUT)"
        )
    ]


async def test_a_slow_answer_is_no_stall(server, make_settings, api: str) -> None:
    """Events further apart than nothing, but each within the limit, are an answer going on."""
    server.script(reply("one two three four five six", chunk_size=4, chunk_delay=0.2))
    settings = make_settings(api, stall_timeout=0.6)
    code, out, lines = await headless(settings)
    assert (code, lines) == (0, [])
    assert "one two three four five six" in out


async def test_connect_timeout_is_named(make_settings, api: str) -> None:
    with unanswered_listener() as base_url:
        settings = make_settings(api, base_url=base_url, connect_timeout=0.3, max_retries=1)
        code, _, lines = await headless(settings)
    assert code == 1
    assert lines == [
        (
            f"dcode: error: could not connect to the model server at {base_url} within 0.3 s "
            "(connect timeout; set connect_timeout or DCODE_CONNECT_TIMEOUT)"
        )
    ]


async def test_malformed_chunk_is_invalid_data(server, make_settings, api: str) -> None:
    server.script(fault.malformed_chunk(after_chunks=2))
    code, _, lines = await headless(make_settings(api, max_retries=2))
    assert code == 1
    assert lines == [
        f"dcode: error: the model server at {server.base_url} sent invalid data (a streamed event that is not JSON)"
    ]


async def test_drop_mid_stream_is_closed_mid_answer(server, make_settings, api: str) -> None:
    server.script(fault.drop_mid_stream(after_chunks=3))
    code, _, lines = await headless(make_settings(api, max_retries=2))
    assert code == 1
    assert lines == [
        f"dcode: error: the connection to the model server at {server.base_url} was closed mid-answer"
    ]


async def test_retries_succeed_within_the_budget(server, make_settings, api: str) -> None:
    server.script(fault.status(429, retry_after=0.05), fault.status(500), reply("made it"))
    settings = make_settings(api, max_retries=3, retry_budget=30, request_timeout=5)
    code, out, lines = await headless(settings)
    assert (code, out.strip(), lines) == (0, "made it", [])
    assert len(server.requests) == 3


async def test_a_slow_first_byte_within_the_limit_is_answered(
    server, make_settings, api: str
) -> None:
    server.script(fault.stall_before_headers(0.4, text="worth the wait"))
    code, out, _ = await headless(make_settings(api, request_timeout=10, max_retries=0))
    assert (code, out.strip()) == (0, "worth the wait")


async def test_an_interrupt_ends_the_answer_wherever_it_lands(
    server, make_settings, api: str
) -> None:
    """Cancelling the model's stream ends it then, at whatever point of the stream the
    cancellation lands, even as a chunk arrives (where ``asyncio.wait_for`` on Python 3.11
    drops it, and the answer would stream on to its end)."""
    from langchain_core.messages import HumanMessage

    from dcode.models.factory import build_chat_model, model_http_client, resolve_model

    settings = make_settings(api, stall_timeout=30.0)
    words = 300
    server.script(*[reply("word " * words, chunk_size=5, chunk_delay=0.002) for _ in range(20)])
    client = model_http_client(settings)
    model = build_chat_model(resolve_model(settings), settings, http_async_client=client)
    try:
        for attempt in range(20):
            seen = 0

            async def consume() -> None:
                nonlocal seen
                async for _ in model.astream([HumanMessage("go")]):
                    seen += 1

            task = asyncio.create_task(consume())
            while seen < 5 + attempt * 3:  # noqa: ASYNC110 - a count of chunks, polled
                await asyncio.sleep(0.001)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert task.cancelled(), (
                f"attempt {attempt}: the stream went on to its end ({seen} chunks)"
            )
            assert seen < words, f"attempt {attempt}: {seen} chunks came after the interrupt"
    finally:
        await client.aclose()
