"""Merging runs of streamed tool-call argument deltas that have already arrived.

A model writing a large file streams its arguments a few bytes at a time: 1 MB comes as about
120,000 server-sent events. Every event costs the OpenAI SDK a pydantic model, langchain an
``AIMessageChunk``, LangGraph a callback and dcode an event, some 330 µs in all, so once the
server sends faster than that the client falls behind: a 1 MB argument took 37 s of CPU.

``ArgsDeltaMerger`` sits on the raw response body (see ``dcode/models/transport.py``) and joins
consecutive argument-only deltas of the same call into one event, on both wires. It only ever
merges bytes it has been given: a batch is whatever arrived while the client was busy, so when
the client keeps up nothing is held back and every delta still reaches the screen as it comes.
Anything it does not recognise exactly (text, names, ids, usage, finish reasons, comments,
multi-line data, CRLF framing) passes through byte for byte, and a merged event carries the same
arguments as the run it replaces, so what the model sent is what the tool receives.
"""

# Any: the provider's streamed JSON chunks, whose shape _chat_piece checks before one is rewritten

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # in the module, not in its stubs
from typing import Any

RESPONSES_ARGS_EVENT = b"event: response.function_call_arguments.delta\n"
_DATA = b"data: "
_CHAT_MARK = b'"arguments":'
_CHAT_ARGS = b'"arguments":"'
_RESPONSES_ARGS = b'"delta":"'
# Values that differ between two deltas of one call without meaning anything: the Responses
# event counter, and OpenAI's random padding that evens out event sizes.
_VOLATILE = re.compile(rb'"sequence_number":\d+|"obfuscation":"(?:[^"\\]|\\.)*"')
_CHAT_SCALARS = ("id", "object", "created", "model", "system_fingerprint", "service_tier")
_CHAT_TOP = frozenset({*_CHAT_SCALARS, "choices", "usage", "obfuscation"})
_CHAT_CHOICE = frozenset({"index", "delta", "finish_reason", "logprobs"})
_CHAT_CALL = frozenset({"index", "id", "type", "function"})
_RESPONSES_KEYS = frozenset(
    {"type", "sequence_number", "item_id", "output_index", "delta", "obfuscation"}
)


@dataclass(slots=True)
class _Run:
    """Consecutive deltas of one call: the first event's frame and data, what every later delta
    of the run must match (``key``), and the argument pieces."""

    key: tuple[object, ...]
    head: bytes
    data: dict[str, Any]
    frames: list[bytes]
    pieces: list[str]
    skeleton: bytes | None = None
    """The first frame without its argument string and volatile values: a later frame with the
    same skeleton is a delta of the same call, with no need to parse it."""

    def piece_of(self, frame: bytes) -> str | None:
        """The argument piece of ``frame`` if it has the run's skeleton, else None."""
        if self.skeleton is None:
            return None
        split = _split_arguments(frame, self.head)
        return split[1] if split is not None and split[0] == self.skeleton else None

    def render(self) -> bytes:
        if len(self.frames) == 1:
            return self.frames[0]
        _set_arguments(self.data, "".join(self.pieces))
        return (
            self.head
            + _DATA
            + json.dumps(self.data, ensure_ascii=False, separators=(",", ":")).encode()
            + b"\n\n"
        )


class ArgsDeltaMerger:
    """Feed it the body as it arrives; it returns complete events, runs of argument deltas merged."""

    def __init__(self) -> None:
        self._pending = b""
        self._verbatim = False

    def feed(self, data: bytes) -> bytes:
        """The complete events in ``data`` (and what was left over before); a trailing partial
        event waits for the rest, which would be of no use to the SSE parser either."""
        if self._verbatim:
            return data
        buffer = self._pending + data
        if b"\r" in buffer:  # CRLF framing: not worth parsing, pass everything on as it is
            self._verbatim, self._pending = True, b""
            return buffer
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self._pending = buffer
            return b""
        self._pending = buffer[end + 2 :]
        return self._merge(buffer[: end + 2])

    def flush(self) -> bytes:
        """Whatever is left at the end of the body, unchanged."""
        rest, self._pending = self._pending, b""
        return rest

    def _merge(self, complete: bytes) -> bytes:
        out: list[bytes] = []
        run: _Run | None = None
        for frame in complete.split(b"\n\n")[:-1]:
            frame += b"\n\n"
            if run is not None and (piece := run.piece_of(frame)) is not None:
                run.frames.append(frame)
                run.pieces.append(piece)
                continue
            delta = _args_delta(frame)
            if delta is not None:
                key, head, data, piece = delta
                if run is not None and run.key == key:
                    run.frames.append(frame)
                    run.pieces.append(piece)
                    continue
                if run is not None:
                    out.append(run.render())
                split = _split_arguments(frame, head)
                run = _Run(
                    key,
                    head,
                    data,
                    [frame],
                    [piece],
                    split[0] if split and split[1] == piece else None,
                )
                continue
            if run is not None:
                out.append(run.render())
                run = None
            out.append(frame)
        if run is not None:
            out.append(run.render())
        return b"".join(out)


def _args_delta(frame: bytes) -> tuple[tuple[object, ...], bytes, dict[str, Any], str] | None:
    """(what identifies the call, the lines before ``data:``, the parsed data, the argument piece)
    for an event that carries nothing but a piece of a call's arguments; None for anything else."""
    if frame.startswith(RESPONSES_ARGS_EVENT):
        head, body = RESPONSES_ARGS_EVENT, frame[len(RESPONSES_ARGS_EVENT) :]
    elif frame.startswith(_DATA) and _CHAT_MARK in frame:
        head, body = b"", frame
    else:
        return None
    if not body.startswith(_DATA) or b"\n" in body[:-2]:
        return None  # another field, or data over several lines
    try:
        data = json.loads(body[len(_DATA) : -2])
    except ValueError:
        return None  # the SDK reports it
    found = _responses_piece(data) if head else _chat_piece(data)
    return None if found is None else (found[0], head, data, found[1])


def _chat_piece(data: object) -> tuple[tuple[object, ...], str] | None:
    """A Chat Completions chunk whose only content is one call's argument piece. The key holds
    every other value the chunk has, so two chunks with equal keys differ in their pieces only
    (and in OpenAI's random ``obfuscation`` padding)."""
    if not isinstance(data, dict) or not data.keys() <= _CHAT_TOP or data.get("usage") is not None:
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        return None
    choice = choices[0]
    if (
        not choice.keys() <= _CHAT_CHOICE
        or choice.get("finish_reason") is not None
        or choice.get("logprobs") is not None
    ):
        return None
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return None
    others = tuple((key, value) for key, value in delta.items() if key != "tool_calls")
    if any(value not in (None, "") for _, value in others):
        return None
    calls = delta.get("tool_calls")
    if not isinstance(calls, list) or len(calls) != 1 or not isinstance(calls[0], dict):
        return None
    call = calls[0]
    function = call.get("function")
    if (
        not call.keys() <= _CHAT_CALL
        or not isinstance(call.get("index"), int)
        or not isinstance(function, dict)
    ):
        return None
    # A name on a later delta is concatenated by langchain; keep such deltas apart, as sent.
    if not function.keys() <= {"arguments", "name"} or function.get("name") not in (None, ""):
        return None
    piece = function.get("arguments")
    if not isinstance(piece, str):
        return None
    top = tuple((key, data[key]) for key in _CHAT_SCALARS if key in data)
    call_fields = tuple((key, value) for key, value in call.items() if key != "function")
    return (top, choice.get("index"), others, call_fields, "name" in function), piece


def _responses_piece(data: object) -> tuple[tuple[object, ...], str] | None:
    if not isinstance(data, dict) or not data.keys() <= _RESPONSES_KEYS:
        return None
    piece, item = data.get("delta"), data.get("item_id")
    if not isinstance(piece, str) or not isinstance(item, str):
        return None
    return (item, data.get("output_index")), piece


def _split_arguments(frame: bytes, head: bytes) -> tuple[bytes, str] | None:
    """(``frame`` without its argument string and volatile values, the argument string). A raw
    ``"arguments":"`` (or ``"delta":"``) can only be a key: inside a JSON string its quotes
    would be escaped."""
    marker = _RESPONSES_ARGS if head else _CHAT_ARGS
    at = frame.find(marker)
    if at < 0:
        return None
    start = at + len(marker)
    try:
        text = frame[start:].decode()
        piece, end = scanstring(text, 0)
    except ValueError:
        return None
    return _VOLATILE.sub(b"", frame[:start] + b"\0" + text[end:].encode()), piece


def _set_arguments(data: dict[str, Any], arguments: str) -> None:
    if "choices" in data:
        data["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = arguments
    else:
        data["delta"] = arguments
