"""Streamed tool-call arguments: merged where they have piled up, never changed, never held back.

The bytes are the scripted server's own streams on both wires; the end-to-end tests go through
the real client, graph and tools.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
from collections.abc import AsyncIterator

import httpx2
import pytest

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.models.sse_merge import ArgsDeltaMerger
from dcode.models.transport import AnswerStream, ClosedMidAnswer
from dcode.settings.config import ApprovalMode
from tests.support.model_server import reply, tool_call

# Quotes, backslashes, newlines, tabs, non-ASCII and an astral character: everything that JSON
# escapes or that is more than one byte in UTF-8.
TRICKY = 'line "one"\n\tback\\slash café ✓ 🙂 {"nested": [1, 2]}\n'


def wire_body(server, api: str, *steps) -> bytes:
    """The raw body the scripted server streams for ``steps`` (one request per step)."""
    server.script(*steps)
    path, body = (
        (
            "/chat/completions",
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
        )
        if api == "chat"
        else ("/responses", {"model": "m", "stream": True, "input": "x"})
    )
    with (
        httpx2.Client() as client,
        client.stream("POST", server.base_url + path, json=body) as response,
    ):
        return b"".join(response.iter_raw())


def events(body: bytes) -> list[bytes]:
    return [frame + b"\n\n" for frame in body.split(b"\n\n") if frame]


def arguments_by_call(body: bytes) -> dict[str, str]:
    """Each call's arguments, joined from its deltas, on either wire."""
    joined: dict[str, str] = {}
    for frame in events(body):
        data_line = frame.rstrip(b"\n").split(b"\n")[-1]
        if not data_line.startswith(b"data: {"):
            continue
        data = json.loads(data_line[6:])
        if data.get("type") == "response.function_call_arguments.delta":
            joined[data["item_id"]] = joined.get(data["item_id"], "") + data["delta"]
        for choice in data.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                key = f"call-{call['index']}"
                joined[key] = joined.get(key, "") + (
                    (call.get("function") or {}).get("arguments") or ""
                )
    return joined


def merged(body: bytes, pieces: list[int] | None = None) -> tuple[bytes, list[bytes]]:
    """The merger's output for ``body`` fed in pieces of the given sizes (all at once by default)."""
    merger = ArgsDeltaMerger()
    outputs, start = [], 0
    for size in pieces or [len(body)]:
        outputs.append(merger.feed(body[start : start + size]))
        start += size
    outputs.append(merger.feed(body[start:]) + merger.flush())
    return b"".join(outputs), outputs


def big_call_steps(size: int, chunk: int):
    content = (TRICKY * (size // len(TRICKY) + 1))[:size]
    calls = [
        tool_call("write_file", {"file_path": "a.txt", "content": content}),
        tool_call("write_file", {"file_path": "b.txt", "content": content[::-1]}),
    ]
    return content, reply("Writing two files.", tool_calls=calls, chunk_size=chunk)


def test_many_small_deltas_merge_into_the_same_arguments(server, api: str) -> None:
    _, step = big_call_steps(20_000, 3)
    body = wire_body(server, api, step)
    out, _ = merged(body)
    assert arguments_by_call(out) == arguments_by_call(body)
    assert len(events(out)) < len(events(body)) / 100  # about 14,000 deltas became a handful


def test_pieces_cut_anywhere_give_the_same_arguments(server, api: str) -> None:
    _, step = big_call_steps(5_000, 2)
    body = wire_body(server, api, step)
    rng = random.Random(7)
    sizes = [
        rng.randint(1, 700) for _ in range(len(body) // 350)
    ]  # cuts mid-event and mid-character
    out, _ = merged(body, sizes)
    assert arguments_by_call(out) == arguments_by_call(body)


def test_everything_but_argument_deltas_passes_unchanged(server, api: str) -> None:
    _, step = big_call_steps(2_000, 5)
    body = wire_body(server, api, step)
    out, _ = merged(body)

    def others(stream: bytes) -> list[bytes]:
        def is_delta(frame: bytes) -> bool:
            if frame.startswith(b"event: response.function_call_arguments.delta\n"):
                return True
            return b'"arguments":"' in frame and b'"name":"' not in frame

        return [frame for frame in events(stream) if not is_delta(frame)]

    assert others(out) == others(body)  # text, names, ids, finish, usage, [DONE]: byte for byte


def test_one_event_at_a_time_is_passed_on_at_once(server, api: str) -> None:
    _, step = big_call_steps(300, 4)
    body = wire_body(server, api, step)
    frames = events(body)
    merger = ArgsDeltaMerger()
    assert [merger.feed(frame) for frame in frames] == frames  # nothing held back, nothing changed


@pytest.mark.parametrize(
    "body",
    [
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"a"}}]}}]}\r\n\r\n'
        * 3,
        b": keep-alive\n\n" * 3,
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"x","arguments":"a"}}]}}]}\n\n'
        * 3,
        b'data: {"choices":[{"index":0,"delta":{"content":"hi","tool_calls":[{"index":0,"function":{"arguments":"a"}}]}}]}\n\n'
        * 3,
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"a\n\n'
        * 2,
        b'id: 7\ndata: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"a"}}]}}]}\n\n'
        * 3,
    ],
    ids=["crlf", "comments", "names", "content", "not-json", "other-fields"],
)
def test_what_it_does_not_recognise_passes_byte_for_byte(body: bytes) -> None:
    assert merged(body)[0] == body


def test_calls_and_choices_are_never_mixed() -> None:
    def delta(index: int, piece: str) -> bytes:
        data = {
            "id": "c",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": index, "function": {"arguments": piece}}]},
                }
            ],
        }
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    body = delta(0, "ab") + delta(0, "cd") + delta(1, "xy") + delta(0, "ef")
    out, _ = merged(body)
    assert arguments_by_call(out) == {"call-0": "abcdef", "call-1": "xy"}
    assert len(events(out)) == 3  # ab+cd, xy, ef: order kept


class Pieces(httpx2.AsyncByteStream):
    """A response body that yields ``pieces``; ``gate`` (if any) is awaited before each one.
    Like a socket, it cannot be read by two iterations at once."""

    def __init__(
        self, pieces: list[bytes | Exception], gate: asyncio.Queue[None] | None = None
    ) -> None:
        self.pieces, self.gate, self.closed, self.reading = list(pieces), gate, False, False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert not self.reading, "two readers of one body"
        self.reading = True
        try:
            while self.pieces:
                if self.gate is not None:
                    await self.gate.get()
                piece = self.pieces.pop(0)
                if isinstance(piece, Exception):
                    raise piece
                yield piece
        finally:
            self.reading = False

    async def aclose(self) -> None:
        self.closed = True


def chat_delta(piece: str) -> bytes:
    data = {
        "id": "c",
        "choices": [
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}
        ],
    }
    return b"data: " + json.dumps(data).encode() + b"\n\n"


REQUEST = httpx2.Request("POST", "http://model.test/v1/chat/completions")


async def test_what_has_arrived_is_read_as_one_batch() -> None:
    stream = AnswerStream(Pieces([chat_delta(c) for c in "abcdefgh"]), REQUEST, ArgsDeltaMerger())
    reads = [data async for data in stream]
    assert len(reads) == 1 and arguments_by_call(reads[0]) == {"call-0": "abcdefgh"}


async def test_nothing_waits_for_data_that_has_not_arrived() -> None:
    gate: asyncio.Queue[None] = asyncio.Queue()
    stream = AnswerStream(Pieces([chat_delta(c) for c in "abc"], gate), REQUEST, ArgsDeltaMerger())
    reads = stream.__aiter__()
    for expected in "abc":
        gate.put_nowait(None)
        assert await asyncio.wait_for(reads.__anext__(), 5) == chat_delta(expected)
    gate.put_nowait(None)
    with pytest.raises(StopAsyncIteration):
        await reads.__anext__()


async def test_iterating_again_continues_with_the_same_reader() -> None:
    """The OpenAI client stops at ``[DONE]`` and drains the rest of the body with a new loop."""
    gate: asyncio.Queue[None] = asyncio.Queue()
    inner = Pieces([chat_delta("a"), b"data: [DONE]\n\n", b": trailing comment\n\n"], gate)
    stream = AnswerStream(inner, REQUEST, ArgsDeltaMerger())
    first = stream.__aiter__()
    gate.put_nowait(None)
    assert await first.__anext__() == chat_delta("a")
    gate.put_nowait(None)
    assert await first.__anext__() == b"data: [DONE]\n\n"
    gate.put_nowait(None)
    assert [data async for data in stream] == [
        b": trailing comment\n\n"
    ]  # while `first` is suspended
    await stream.aclose()
    assert inner.closed


async def test_a_failure_mid_answer_comes_after_the_data_before_it() -> None:
    inner = Pieces(
        [chat_delta("a"), chat_delta("b"), httpx2.RemoteProtocolError("peer closed connection")]
    )
    stream = AnswerStream(inner, REQUEST, ArgsDeltaMerger())
    reads = []
    with pytest.raises(ClosedMidAnswer) as failure:  # noqa: PT012 - the cut comes mid-loop
        async for data in stream:
            reads.append(data)
    assert arguments_by_call(b"".join(reads)) == {"call-0": "ab"}
    assert isinstance(failure.value.__cause__, httpx2.RemoteProtocolError)
    await stream.aclose()
    assert inner.closed


async def test_a_big_argument_in_tiny_deltas_reaches_the_tool_exactly(
    server, make_settings, workspace, api: str
) -> None:
    content, step = big_call_steps(60_000, 3)
    server.script(step, reply("Both written."))
    out, err = io.StringIO(), io.StringIO()
    settings = make_settings(api, approve=ApprovalMode.ALL)
    request = HeadlessRequest(prompt="write them", output_format=OutputFormat.STREAM_JSON)
    code = await asyncio.wait_for(run_headless(settings, request, out=out, err=err), 120)
    assert code == 0, err.getvalue()
    assert (workspace / "a.txt").read_text(encoding="utf-8") == content
    assert (workspace / "b.txt").read_text(encoding="utf-8") == content[::-1]
    # The live deltas the screen shows add up to exactly what the model sent.
    streamed: dict[str, str] = {}
    for line in out.getvalue().splitlines():
        event = json.loads(line)
        if event["type"] == "tool_args_delta":
            streamed[event["call_id"]] = streamed.get(event["call_id"], "") + event["delta"]
    sent = [
        json.dumps({"file_path": "a.txt", "content": content}),
        json.dumps({"file_path": "b.txt", "content": content[::-1]}),
    ]
    assert sorted(streamed.values()) == sorted(sent)
    # The server sends the deltas faster than a client handles them one by one, so they pile
    # up and reach the graph merged: a few dozen chunks instead of one per delta.
    wire_deltas = sum(len(arguments) // 3 for arguments in sent)
    delta_events = sum(
        1 for line in out.getvalue().splitlines() if json.loads(line)["type"] == "tool_args_delta"
    )
    assert delta_events < wire_deltas / 10
