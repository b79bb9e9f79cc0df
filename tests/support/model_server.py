"""A scripted, OpenAI-compatible model server for dcode's tests.

dcode talks to models through the real ``langchain_openai.ChatOpenAI`` client,
so tests need a server that speaks the exact wire formats that client parses:
Chat Completions (``/v1/chat/completions``) and the Responses API
(``/v1/responses``), streamed as server-sent events or as plain JSON. Instead
of mocking the client we run a tiny HTTP server on a loopback port and *script*
what it answers, one step per completion request::

    with ScriptedModelServer() as server:
        server.script(reply("Hello!"), fault.status(429, retry_after=0.2), reply("ok"))
        llm = ChatOpenAI(model="test-model", base_url=server.base_url, api_key="test")
        ...
        assert server.requests[0].messages[-1]["content"] == "hi"

The same script works on both wires: a :class:`Reply` is rendered for whichever
endpoint receives it. Faults (:data:`fault`) reproduce the failure modes dcode
must survive: HTTP errors with ``Retry-After``, context overflow, a socket
dropped mid-stream, an unparseable SSE chunk, and a server that hangs before
its headers or in the middle of a stream.

It also answers the Files API (``/v1/files``, see :mod:`tests.support.files_api` and
``server.files``), so uploads and chat requests that refer to files by id run over real HTTP;
a completion request naming a file that is gone is refused without using a step.

And it serves static pages for GET requests, for tools that fetch URLs: ``server.pages`` maps a
path to ``(status, content type, body)`` and ``server.redirects`` a path to the ``Location`` of
a 302 (``server.url + path`` is the page's address). Neither uses a script step.

The server can also run as its own process for end-to-end CLI/tmux tests::

    python -m tests.support.model_server --script script.json \
        --port-file port.txt --log requests.jsonl

Only the standard library is used, so the server behaves the same in-process
and in a subprocess, for sync and async clients alike.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import re
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Literal, Self
from urllib.parse import unquote

from tests.support.files_api import (
    INVALID_FILE_CODE,
    Answer,
    FilesApi,
    invalid_file_answer,
    referenced_file_ids,
)
from tests.support.llama_cpp_wire import LlamaCppPython, request_problems, server_error_body
from tests.support.openai_usage import is_openai_model, openai_input_tokens

__all__ = [
    "ContextLengthExceeded",
    "DropMidStream",
    "FileError",
    "MalformedChunk",
    "ModelServerProcess",
    "RecordedRequest",
    "Reply",
    "ScriptedModelServer",
    "StallBeforeHeaders",
    "StallMidStream",
    "StatusFault",
    "Step",
    "ToolCall",
    "fault",
    "load_script",
    "main",
    "read_request_log",
    "reply",
    "steps_from_json",
    "steps_to_json",
    "tool_call",
    "wait_for_port_file",
    "write_script",
]

Wire = Literal["chat", "responses"]

CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
RESPONSES_PATHS = frozenset({"/v1/responses", "/responses"})
MODELS_PATHS = frozenset({"/v1/models", "/models"})
OLLAMA_SHOW_PATH = "/api/show"
LMSTUDIO_MODELS_PREFIX = "/api/v0/models/"
LITELLM_MODEL_INFO_PATHS = frozenset({"/model/info", "/v1/model/info"})
CONTROL_SCRIPT_PATH = "/_control/script"
CONTROL_REQUESTS_PATH = "/_control/requests"
LLAMA_CPP_INVALID = "llama_cpp_invalid_request"

_REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------
# Script steps
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One function call the scripted model makes.

    ``arguments`` may be a string so tests can script deliberately invalid JSON;
    ``call_id`` is normally left to the server, which hands out ``call_1``,
    ``call_2``, ... in request order so ids are unique yet predictable.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None

    def arguments_json(self) -> str:
        """The arguments exactly as they go on the wire (a JSON string)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, so scripts can be written to a file."""
        data: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if isinstance(self.arguments, Mapping):
            data["arguments"] = dict(self.arguments)
        if self.call_id is not None:
            data["call_id"] = self.call_id
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Inverse of :meth:`to_dict`; ``args``/``id`` are accepted as aliases."""
        arguments = data.get("arguments", data.get("args", {}))
        call_id = data.get("call_id", data.get("id"))
        return cls(name=str(data["name"]), arguments=arguments, call_id=call_id)


@dataclass(frozen=True)
class Step:
    """One scripted answer; each completion request consumes one step.

    ``count`` is how many requests the step answers (``None`` = every request
    from now on), so a "persistent 500" is a single step rather than a list.
    """

    count: int | None = field(default=1, kw_only=True)
    when: str | None = field(default=None, kw_only=True)
    """Only a request whose first user message contains this text takes the step (None: any).
    The server serves the first step in the script that the request may take, so requests of
    conversations running side by side (a parent and its subagents) each get their own steps."""

    kind: ClassVar[str] = ""
    _registry: ClassVar[dict[str, type[Step]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            Step._registry[cls.kind] = cls

    def __post_init__(self) -> None:
        if self.count is not None and self.count < 1:
            raise ValueError(f"a step must be served at least once, got count={self.count}")

    def times(self, n: int) -> Self:
        """This step, answering the next ``n`` requests."""
        return replace(self, count=n)

    def answering(self, text: str) -> Self:
        """This step, only for a conversation whose first user message contains ``text``."""
        return replace(self, when=text)

    def forever(self) -> Self:
        """This step, answering every remaining request (it is never used up)."""
        return replace(self, count=None)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form: ``type`` plus every field that differs from its default."""
        data: dict[str, Any] = {"type": self.kind}
        for f in fields(self):
            if f.name == "count":
                continue
            value = getattr(self, f.name)
            if value == _field_default(f):
                continue
            data[f.name] = _plain(value)
        if self.count is None:
            data["repeat"] = True
        elif self.count != 1:
            data["times"] = self.count
        return data

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Step:
        """Build the step a :meth:`to_dict` dict describes."""
        payload = dict(data)
        kind = payload.pop("type", None)
        step_cls = Step._registry.get(str(kind))
        if step_cls is None:
            known = ", ".join(sorted(Step._registry))
            raise ValueError(f"unknown step type {kind!r} (known: {known})")
        count: int | None = int(payload.pop("times", 1))
        if payload.pop("repeat", False):
            count = None
        payload.pop("count", None)
        return step_cls(**payload, count=count)


@dataclass(frozen=True)
class Reply(Step):
    """A successful model answer: text, tool calls, reasoning, usage.

    ``usage`` is ``(input_tokens, output_tokens)``; without it the server
    estimates both from the request and answer sizes (about 4 characters per
    token), which is enough for context-accounting tests to see real numbers.
    ``chunk_size``/``chunk_delay`` shape the stream so tests can watch text
    arrive piece by piece.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    usage: tuple[int, int] | None = None
    cached_tokens: int = 0
    chunk_size: int | None = None
    chunk_delay: float = 0.0
    finish_reason: str | None = None

    kind: ClassVar[str] = "reply"

    def __post_init__(self) -> None:
        super().__post_init__()
        calls = tuple(
            c if isinstance(c, ToolCall) else ToolCall.from_dict(c) for c in self.tool_calls
        )
        object.__setattr__(self, "tool_calls", calls)
        if self.usage is not None:
            input_tokens, output_tokens = self.usage
            object.__setattr__(self, "usage", (int(input_tokens), int(output_tokens)))
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError("chunk_size must be a positive number of characters")


@dataclass(frozen=True)
class StatusFault(Step):
    """An HTTP error answer in OpenAI's ``{"error": {...}}`` shape.

    ``retry_after`` (seconds, fractions allowed: the openai SDK parses floats)
    becomes the ``Retry-After`` header the client's own retry loop honours.
    """

    status: int
    retry_after: float | None = None
    message: str | None = None
    error_code: str | None = None
    error_type: str | None = None
    param: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    kind: ClassVar[str] = "status"


@dataclass(frozen=True)
class ContextLengthExceeded(Step):
    """The 400 ``context_length_exceeded`` error, worded the way OpenAI words it.

    Callers recover from this error (by compacting history, say), and error
    classifiers match on its text, so the message must look real: the Chat
    wire reports the limit and the request's token count, the Responses wire
    uses its own "exceeds the context window" sentence.
    """

    limit: int = 128_000

    kind: ClassVar[str] = "context_length_exceeded"


@dataclass(frozen=True)
class DropMidStream(Step):
    """Start answering, then close the socket without finishing the response.

    The stream is sent with chunked transfer encoding, so the client can tell a
    cut-off body from a complete one and must raise rather than hang.
    """

    after_chunks: int = 2
    text: str = "This answer is cut off before it can finish."

    kind: ClassVar[str] = "drop_mid_stream"


@dataclass(frozen=True)
class MalformedChunk(Step):
    """Send ``after_chunks`` valid SSE events, then a ``data:`` line that is not JSON."""

    after_chunks: int = 1
    text: str = "This answer is corrupted."
    garbage: str = '{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "oops'

    kind: ClassVar[str] = "malformed_chunk"


@dataclass(frozen=True)
class StallBeforeHeaders(Step):
    """Read the request, then send nothing for ``seconds``: a server that accepted the
    request and hung. If the client is still there afterwards, ``text`` is the answer."""

    seconds: float = 30.0
    text: str = "This answer comes late."

    kind: ClassVar[str] = "stall_before_headers"


@dataclass(frozen=True)
class StallMidStream(Step):
    """Send ``after_chunks`` SSE events, then nothing for ``seconds``, then the rest."""

    after_chunks: int = 2
    seconds: float = 30.0
    text: str = "This answer stops in the middle for a while."
    keepalive: float = 0.0
    """When set, an SSE comment (``: keepalive``) every so many seconds of the silence, as
    OpenAI's servers send during long generations: bytes that carry no event."""

    kind: ClassVar[str] = "stall_mid_stream"


@dataclass(frozen=True)
class FileError(Step):
    """The 400 ``invalid_file_id`` a provider answers when it cannot use a referenced file,
    even though the server's Files API still holds it (a provider-side loss or lag).

    ``ids=None`` names every file id the request used; ``named=False`` gives the message that
    names none, so a client cannot tell which file to upload again.
    """

    ids: tuple[str, ...] | None = None
    named: bool = True

    kind: ClassVar[str] = "file_error"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ids is not None:
            object.__setattr__(self, "ids", tuple(str(i) for i in self.ids))


def _field_default(f: Any) -> Any:
    """The default of a dataclass field, whether plain or from a factory."""
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


def _plain(value: Any) -> Any:
    """Turn step field values into JSON-friendly data."""
    if isinstance(value, ToolCall):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def reply(
    text: str = "",
    *,
    tool_calls: Iterable[ToolCall] = (),
    reasoning: str | None = None,
    usage: tuple[int, int] | None = None,
    cached_tokens: int = 0,
    chunk_size: int | None = None,
    chunk_delay: float = 0.0,
    finish_reason: str | None = None,
    repeat: bool = False,
) -> Reply:
    """A scripted model answer (see :class:`Reply`); ``repeat=True`` serves it forever.

    ``finish_reason`` defaults to ``"tool_calls"`` when there are tool calls and
    ``"stop"`` otherwise; ``"length"`` makes the Responses wire report an
    incomplete response, as a truncated real answer would.
    """
    return Reply(
        text=text,
        tool_calls=tuple(tool_calls),
        reasoning=reasoning,
        usage=usage,
        cached_tokens=cached_tokens,
        chunk_size=chunk_size,
        chunk_delay=chunk_delay,
        finish_reason=finish_reason,
        count=None if repeat else 1,
    )


def tool_call(
    name: str, args: Mapping[str, Any] | str | None = None, *, call_id: str | None = None
) -> ToolCall:
    """A function call for :func:`reply`; ``args`` may be raw (invalid) JSON text."""
    return ToolCall(name=name, arguments={} if args is None else args, call_id=call_id)


class _Faults:
    """Factories for failure steps, grouped so scripts read ``fault.status(...)``."""

    @staticmethod
    def status(
        status: int,
        *,
        retry_after: float | None = None,
        message: str | None = None,
        error_code: str | None = None,
        error_type: str | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
        repeat: bool = False,
    ) -> StatusFault:
        """An HTTP error; message/type/code default to what OpenAI sends for ``status``."""
        return StatusFault(
            status=status,
            retry_after=retry_after,
            message=message,
            error_code=error_code,
            error_type=error_type,
            param=param,
            headers=dict(headers or {}),
            count=None if repeat else 1,
        )

    @staticmethod
    def context_length_exceeded(
        *, limit: int = 128_000, repeat: bool = False
    ) -> ContextLengthExceeded:
        """A 400 with code ``context_length_exceeded`` and a realistic message."""
        return ContextLengthExceeded(limit=limit, count=None if repeat else 1)

    @staticmethod
    def drop_mid_stream(
        after_chunks: int = 2, *, text: str | None = None, repeat: bool = False
    ) -> DropMidStream:
        """Send ``after_chunks`` SSE events, then close the socket abruptly."""
        step = DropMidStream(after_chunks=after_chunks, count=None if repeat else 1)
        return step if text is None else replace(step, text=text)

    @staticmethod
    def malformed_chunk(
        after_chunks: int = 1, *, garbage: str | None = None, repeat: bool = False
    ) -> MalformedChunk:
        """Send ``after_chunks`` valid SSE events, then one whose data is not JSON."""
        step = MalformedChunk(after_chunks=after_chunks, count=None if repeat else 1)
        return step if garbage is None else replace(step, garbage=garbage)

    @staticmethod
    def stall_before_headers(
        seconds: float = 30.0, *, text: str | None = None, repeat: bool = False
    ) -> StallBeforeHeaders:
        """Send nothing at all for ``seconds``, then answer (if the client waited)."""
        step = StallBeforeHeaders(seconds=seconds, count=None if repeat else 1)
        return step if text is None else replace(step, text=text)

    @staticmethod
    def stall_mid_stream(
        after_chunks: int = 2,
        seconds: float = 30.0,
        *,
        text: str | None = None,
        repeat: bool = False,
        keepalive: float = 0.0,
    ) -> StallMidStream:
        """Send ``after_chunks`` SSE events, go silent for ``seconds`` (but for keep-alive
        comments every ``keepalive`` seconds, when given), then finish."""
        step = StallMidStream(
            after_chunks=after_chunks,
            seconds=seconds,
            count=None if repeat else 1,
            keepalive=keepalive,
        )
        return step if text is None else replace(step, text=text)

    @staticmethod
    def file_error(
        ids: Iterable[str] | None = None, *, named: bool = True, repeat: bool = False
    ) -> FileError:
        """A 400 ``invalid_file_id`` naming ``ids`` (None: every file id the request used)."""
        return FileError(
            ids=None if ids is None else tuple(ids), named=named, count=None if repeat else 1
        )


fault = _Faults()


def steps_to_json(steps: Iterable[Step]) -> str:
    """Serialise a script, for ``--script`` files and the control endpoint."""
    return json.dumps([s.to_dict() for s in steps], indent=2)


def steps_from_json(data: str | bytes | Sequence[Mapping[str, Any]]) -> list[Step]:
    """Parse a script: JSON text, or an already-decoded list of step dicts."""
    decoded = json.loads(data) if isinstance(data, str | bytes) else data
    if not isinstance(decoded, list):
        raise ValueError("a script is a JSON list of step objects")
    return [Step.from_dict(item) for item in decoded]


def write_script(path: str | os.PathLike[str], steps: Iterable[Step]) -> Path:
    """Write a script file for the subprocess mode and return its path."""
    target = Path(path)
    target.write_text(steps_to_json(steps) + "\n", encoding="utf-8")
    return target


def load_script(path: str | os.PathLike[str]) -> list[Step]:
    """Read a script file written by :func:`write_script` (or by hand)."""
    return steps_from_json(Path(path).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------
# Recorded requests
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, kept so tests can assert on what was sent.

    ``received_at`` is ``time.monotonic()`` in the server's process: compare
    two of them (e.g. to check a retry waited for ``Retry-After``), never with
    another process's clock.
    """

    index: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    received_at: float
    step: Step | None = None
    raw_body: bytes = field(default=b"", repr=False, compare=False)
    """The body's bytes as the client sent them (in-process only: the log keeps ``body``)."""
    refused: str | None = None
    """Why the server answered an error before the script was asked (no step was used):
    ``"invalid_file_id"`` when the request referred to files that are gone,
    ``LLAMA_CPP_INVALID`` when it broke the request types of the server ``imitate`` names."""

    @property
    def wire(self) -> Wire | None:
        """Which API the request used, or ``None`` for other paths."""
        if self.path in CHAT_PATHS:
            return "chat"
        if self.path in RESPONSES_PATHS:
            return "responses"
        return None

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed answer."""
        return isinstance(self.body, Mapping) and self.body.get("stream") is True

    @property
    def model(self) -> str | None:
        """The model name the client asked for."""
        return self.body.get("model") if isinstance(self.body, Mapping) else None

    @property
    def messages(self) -> list[Any]:
        """The conversation sent: Chat ``messages`` or Responses ``input`` items, raw."""
        if not isinstance(self.body, Mapping):
            return []
        if "messages" in self.body:
            return list(self.body["messages"])
        items = self.body.get("input", [])
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
        return list(items)

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model, on either wire."""
        if not isinstance(self.body, Mapping):
            return []
        names: list[str] = []
        for tool in self.body.get("tools") or []:
            function = tool.get("function", tool)
            if isinstance(function, Mapping) and "name" in function:
                names.append(str(function["name"]))
        return names

    def transcript(self) -> list[tuple[str, str]]:
        """The conversation as ``(role, text)`` pairs, identical across both wires.

        Roles: ``system`` (also for ``developer``), ``user``, ``assistant``,
        ``tool_call`` (text = the tool name) and ``tool`` (text = its output).
        Lets a test assert "the whole history was sent" without caring which
        wire the client used.
        """
        if self.wire == "responses":
            instructions = self.body.get("instructions") if isinstance(self.body, Mapping) else None
            pairs = [("system", instructions)] if isinstance(instructions, str) else []
            return pairs + [p for item in self.messages for p in _responses_item_pairs(item)]
        return [p for message in self.messages for p in _chat_message_pairs(message)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, as written to the ``--log`` file."""
        return {
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "headers": dict(self.headers),
            "body": self.body,
            "received_at": self.received_at,
            "step": None if self.step is None else self.step.to_dict(),
            "refused": self.refused,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedRequest:
        """Inverse of :meth:`to_dict`, for reading a subprocess's log."""
        step = data.get("step")
        return cls(
            index=int(data["index"]),
            method=str(data["method"]),
            path=str(data["path"]),
            headers=dict(data.get("headers") or {}),
            body=data.get("body"),
            received_at=float(data.get("received_at", 0.0)),
            step=None if step is None else Step.from_dict(step),
            refused=data.get("refused"),
        )


def _content_text(content: Any) -> str:
    """Flatten message content (a string or a list of parts) into text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, Mapping):
            if isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part.get("refusal"), str):
                pieces.append(part["refusal"])
            elif part.get("type") in {"image_url", "input_image", "image"}:
                pieces.append("[image]")
    return "".join(pieces)


def _normal_role(role: Any) -> str:
    """Fold ``developer`` into ``system``: the two wires disagree on the name."""
    return "system" if role == "developer" else str(role)


def _chat_message_pairs(message: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(role, text)`` pairs for one Chat Completions message."""
    role = _normal_role(message.get("role"))
    text = _content_text(message.get("content"))
    calls = message.get("tool_calls") or []
    if text or not calls:
        yield role, text
    for call in calls:
        yield "tool_call", str(call.get("function", {}).get("name", ""))


def _responses_item_pairs(item: Any) -> Iterator[tuple[str, str]]:
    """``(role, text)`` pairs for one Responses input item."""
    if isinstance(item, str):
        yield "user", item
        return
    kind = item.get("type", "message")
    if kind == "message" or (kind is None and "role" in item):
        yield _normal_role(item.get("role")), _content_text(item.get("content"))
    elif kind == "function_call":
        yield "tool_call", str(item.get("name", ""))
    elif kind == "function_call_output":
        output = item.get("output")
        yield "tool", output if isinstance(output, str) else _content_text(output)


def _first_user_text(path: str, body: Any) -> str:
    """The text of the first user message of a completion request's body (``Step.when``)."""
    probe = RecordedRequest(
        index=-1, method="POST", path=path, headers={}, body=body, received_at=0.0
    )
    return next((text for role, text in probe.transcript() if role == "user"), "")


def read_request_log(path: str | os.PathLike[str]) -> list[RecordedRequest]:
    """Read the JSON-lines ``--log`` file of a server subprocess."""
    log = Path(path)
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()
    return [RecordedRequest.from_dict(json.loads(line)) for line in lines if line.strip()]


# --------------------------------------------------------------------------
# Rendering answers for each wire
# --------------------------------------------------------------------------


def _estimate_tokens(text: str) -> int:
    """Rough token count (~4 characters a token), never zero for non-empty text."""
    return math.ceil(len(text) / 4) if text else 0


def _text_pieces(text: str, size: int | None) -> list[str]:
    """Split text the way a stream delivers it: word by word, or ``size`` chars."""
    if not text:
        return []
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return [piece for piece in re.findall(r"\S*\s*", text) if piece]


def _argument_fragments(arguments: str, size: int | None) -> list[str]:
    """Split tool-call arguments into several fragments, as real streams do."""
    if not arguments:
        return []
    step = size or max(1, math.ceil(len(arguments) / 3))
    return [arguments[i : i + step] for i in range(0, len(arguments), step)]


@dataclass(frozen=True)
class _ResolvedCall:
    """A tool call with its wire ids fixed at the moment the step is consumed."""

    name: str
    arguments: str
    call_id: str
    item_id: str


@dataclass(frozen=True)
class _Answer:
    """Everything needed to render one reply on either wire, ids included."""

    model: str
    created: int
    response_id: str
    message_id: str
    reasoning_id: str
    text: str
    reasoning: str
    calls: tuple[_ResolvedCall, ...]
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cached_tokens: int
    finish_reason: str
    chunk_size: int | None
    chunk_delay: float


def _estimated_input_tokens(body: Any) -> int:
    """Prompt tokens of the parts of the request a model would read: as OpenAI counts them for
    an OpenAI model name, about four characters a token for any other."""
    if not isinstance(body, Mapping):
        return 1
    if is_openai_model(body.get("model")):
        return openai_input_tokens(body)
    parts = [body.get(key) for key in ("messages", "input", "instructions", "tools")]
    return max(1, _estimate_tokens(json.dumps([p for p in parts if p is not None])))


def _resolve_answer(
    step: Reply,
    request: RecordedRequest,
    serial: int,
    call_ids: Iterator[int],
    input_scale: float | None = None,
) -> _Answer:
    """Fix ids and usage numbers for one reply so both wires render the same answer."""
    calls = tuple(
        _ResolvedCall(
            name=c.name,
            arguments=c.arguments_json(),
            call_id=c.call_id or f"call_{n}",
            item_id=f"fc_{n}",
        )
        for c, n in ((c, next(call_ids)) for c in step.tool_calls)
    )
    reasoning = step.reasoning or ""
    reasoning_tokens = _estimate_tokens(reasoning)
    if step.usage is not None:
        input_tokens, output_tokens = step.usage
        reasoning_tokens = min(reasoning_tokens, output_tokens)
    else:
        if input_scale is not None and isinstance(request.body, Mapping):
            input_tokens = math.ceil(openai_input_tokens(request.body) * input_scale)
        else:
            input_tokens = _estimated_input_tokens(request.body)
        answer_chars = step.text + "".join(c.name + c.arguments for c in calls)
        output_tokens = max(1, _estimate_tokens(answer_chars) + reasoning_tokens)
    return _Answer(
        model=request.model or "test-model",
        created=int(time.time()),
        response_id=f"resp_{serial}",
        message_id=f"msg_{serial}",
        reasoning_id=f"rs_{serial}",
        text=step.text,
        reasoning=reasoning,
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reasoning_tokens=reasoning_tokens,
        cached_tokens=min(step.cached_tokens, input_tokens),
        finish_reason=step.finish_reason or ("tool_calls" if calls else "stop"),
        chunk_size=step.chunk_size,
        chunk_delay=step.chunk_delay,
    )


def _sse(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    """Encode one server-sent event."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


# ---- Chat Completions ----------------------------------------------------


def _chat_usage(answer: _Answer) -> dict[str, Any]:
    """Chat Completions ``usage`` object."""
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
        "prompt_tokens_details": {"cached_tokens": answer.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": answer.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_body(answer: _Answer) -> dict[str, Any]:
    """A complete, non-streamed ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.text or None,
        "refusal": None,
    }
    if answer.reasoning:
        message["reasoning_content"] = answer.reasoning
    if answer.calls:
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in answer.calls
        ]
    return {
        "id": f"chatcmpl-{answer.response_id}",
        "object": "chat.completion",
        "created": answer.created,
        "model": answer.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": answer.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": _chat_usage(answer),
        "system_fingerprint": "fp_scripted",
    }


def _is_generated(frame: bytes) -> bool:
    """Whether an SSE frame carries generated output (text, reasoning, tool arguments).

    The stream is paced (``chunk_delay``) before those frames only: a real server sends the
    bookkeeping around them (finish reason, usage, ``[DONE]``, Responses' ``.done`` and
    ``completed`` events) as soon as generation stops.
    """
    if b'.delta"' in frame:  # Responses: response.output_text.delta, ...arguments.delta, ...
        return True
    return b'"delta":{' in frame and b'"delta":{}' not in frame


def _chat_stream_events(answer: _Answer, include_usage: bool) -> list[bytes]:
    """The ``chat.completion.chunk`` SSE sequence for one answer, ending in ``[DONE]``.

    Mirrors OpenAI: a role chunk, content deltas, each tool call introduced with
    its id and name then its arguments in fragments (all keyed by ``index``), a
    finish chunk, and, if asked for, a usage chunk with empty ``choices``.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": f"chatcmpl-{answer.response_id}",
            "object": "chat.completion.chunk",
            "created": answer.created,
            "model": answer.model,
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            data["usage"] = None
        return data

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in _text_pieces(answer.reasoning, answer.chunk_size):
        events.append(chunk({"content": None, "reasoning_content": piece}))
    for piece in _text_pieces(answer.text, answer.chunk_size):
        events.append(chunk({"content": piece}))
    for index, call in enumerate(answer.calls):
        opener = {
            "index": index,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [opener]}))
        for fragment in _argument_fragments(call.arguments, answer.chunk_size):
            fragment_delta = {"index": index, "function": {"arguments": fragment}}
            events.append(chunk({"tool_calls": [fragment_delta]}))
    events.append(chunk({}, finish=answer.finish_reason))
    if include_usage:
        final = chunk({})
        final["choices"] = []
        final["usage"] = _chat_usage(answer)
        events.append(final)
    return [_sse(e) for e in events] + [_sse("[DONE]")]


# ---- Responses API -------------------------------------------------------


def _responses_usage(answer: _Answer) -> dict[str, Any]:
    """Responses API ``usage`` object."""
    return {
        "input_tokens": answer.input_tokens,
        "input_tokens_details": {"cached_tokens": answer.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": answer.output_tokens,
        "output_tokens_details": {"reasoning_tokens": answer.reasoning_tokens},
        "total_tokens": answer.input_tokens + answer.output_tokens,
    }


def _reasoning_item(answer: _Answer, summary: str | None) -> dict[str, Any]:
    """A ``reasoning`` output item; an empty summary list while it is streaming."""
    parts = [] if summary is None else [{"type": "summary_text", "text": summary}]
    return {"id": answer.reasoning_id, "type": "reasoning", "summary": parts}


def _message_item(answer: _Answer, done: bool) -> dict[str, Any]:
    """An assistant ``message`` output item, empty while it is streaming."""
    content = [_output_text_part(answer.text)] if done else []
    return {
        "id": answer.message_id,
        "type": "message",
        "role": "assistant",
        "status": "completed" if done else "in_progress",
        "content": content,
    }


def _output_text_part(text: str) -> dict[str, Any]:
    """An ``output_text`` content part."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _function_call_item(call: _ResolvedCall, done: bool) -> dict[str, Any]:
    """A ``function_call`` output item; arguments are empty while streaming."""
    return {
        "id": call.item_id,
        "type": "function_call",
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments if done else "",
        "status": "completed" if done else "in_progress",
    }


def _responses_output(answer: _Answer) -> list[dict[str, Any]]:
    """The finished output items, in the order they are streamed."""
    output: list[dict[str, Any]] = []
    if answer.reasoning:
        output.append(_reasoning_item(answer, answer.reasoning))
    if answer.text:
        output.append(_message_item(answer, done=True))
    output.extend(_function_call_item(c, done=True) for c in answer.calls)
    return output


def _response_object(
    answer: _Answer, request_body: Any, *, status: str, output: list[dict[str, Any]], usage: bool
) -> dict[str, Any]:
    """A ``response`` object; ``status`` is in_progress/completed/incomplete."""
    body = request_body if isinstance(request_body, Mapping) else {}
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    return {
        "id": answer.response_id,
        "object": "response",
        "created_at": answer.created,
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": answer.model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": list(body.get("tools") or []),
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": _responses_usage(answer) if usage else None,
        "metadata": {},
    }


def _final_status(answer: _Answer) -> str:
    """``incomplete`` for a length-truncated answer, else ``completed``."""
    return "incomplete" if answer.finish_reason == "length" else "completed"


def _responses_body(answer: _Answer, request_body: Any) -> dict[str, Any]:
    """A complete, non-streamed Responses API ``response`` object."""
    status = _final_status(answer)
    output = _responses_output(answer)
    return _response_object(answer, request_body, status=status, output=output, usage=True)


class _EventLog:
    """Collects Responses events, numbering them the way the API does."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def emit(self, event_type: str, **data: Any) -> None:
        """Append one event with the next ``sequence_number``."""
        payload = {"type": event_type, "sequence_number": len(self.frames), **data}
        self.frames.append(_sse(payload, event=event_type))


def _stream_reasoning(log: _EventLog, answer: _Answer, index: int) -> None:
    """Events for a reasoning item with one summary part."""
    item_id = answer.reasoning_id
    where = {"item_id": item_id, "output_index": index, "summary_index": 0}
    empty_part = {"type": "summary_text", "text": ""}
    log.emit("response.output_item.added", output_index=index, item=_reasoning_item(answer, None))
    log.emit("response.reasoning_summary_part.added", **where, part=empty_part)
    for piece in _text_pieces(answer.reasoning, answer.chunk_size):
        log.emit("response.reasoning_summary_text.delta", **where, delta=piece)
    log.emit("response.reasoning_summary_text.done", **where, text=answer.reasoning)
    log.emit(
        "response.reasoning_summary_part.done",
        **where,
        part={"type": "summary_text", "text": answer.reasoning},
    )
    done_item = _reasoning_item(answer, answer.reasoning)
    log.emit("response.output_item.done", output_index=index, item=done_item)


def _stream_message(log: _EventLog, answer: _Answer, index: int) -> None:
    """Events for the assistant message: one ``output_text`` part streamed in deltas."""
    where = {"item_id": answer.message_id, "output_index": index, "content_index": 0}
    started = _message_item(answer, done=False)
    log.emit("response.output_item.added", output_index=index, item=started)
    log.emit("response.content_part.added", **where, part=_output_text_part(""))
    for piece in _text_pieces(answer.text, answer.chunk_size):
        log.emit("response.output_text.delta", **where, delta=piece, logprobs=[])
    log.emit("response.output_text.done", **where, text=answer.text, logprobs=[])
    log.emit("response.content_part.done", **where, part=_output_text_part(answer.text))
    log.emit("response.output_item.done", output_index=index, item=_message_item(answer, done=True))


def _stream_function_call(log: _EventLog, answer: _Answer, call: _ResolvedCall, index: int) -> None:
    """Events for one function call: announced, arguments in fragments, done."""
    where = {"item_id": call.item_id, "output_index": index}
    started = _function_call_item(call, done=False)
    log.emit("response.output_item.added", output_index=index, item=started)
    for fragment in _argument_fragments(call.arguments, answer.chunk_size):
        log.emit("response.function_call_arguments.delta", **where, delta=fragment)
    log.emit(
        "response.function_call_arguments.done", **where, name=call.name, arguments=call.arguments
    )
    finished = _function_call_item(call, done=True)
    log.emit("response.output_item.done", output_index=index, item=finished)


def _responses_stream_events(answer: _Answer, request_body: Any) -> list[bytes]:
    """The full Responses event sequence: created → items → completed/incomplete."""
    log = _EventLog()
    pending = _response_object(answer, request_body, status="in_progress", output=[], usage=False)
    log.emit("response.created", response=pending)
    log.emit("response.in_progress", response=pending)
    index = 0
    if answer.reasoning:
        _stream_reasoning(log, answer, index)
        index += 1
    if answer.text:
        _stream_message(log, answer, index)
        index += 1
    for call in answer.calls:
        _stream_function_call(log, answer, call, index)
        index += 1
    status = _final_status(answer)
    log.emit(f"response.{status}", response=_responses_body(answer, request_body))
    return log.frames


# ---- Errors --------------------------------------------------------------

_INVALID = "invalid_request_error"
_SERVER = "server_error"

# status -> (message, type, code), worded like OpenAI's own error bodies
_STATUS_DEFAULTS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", _INVALID, None),
    401: (
        (
            "Incorrect API key provided: test. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        ),
        _INVALID,
        "invalid_api_key",
    ),
    403: ("You are not allowed to access this model.", _INVALID, "permission_denied"),
    404: ("The model does not exist or you do not have access to it.", _INVALID, "model_not_found"),
    429: (
        (
            "Rate limit reached for test-model in organization org-test on tokens per min (TPM): "
            "Limit 30000, Used 30000, Requested 1000. Please try again shortly."
        ),
        "tokens",
        "rate_limit_exceeded",
    ),
    500: (
        "The server had an error while processing your request. Sorry about that!",
        _SERVER,
        None,
    ),
    502: ("Bad gateway.", _SERVER, None),
    503: ("The engine is currently overloaded, please try again later.", _SERVER, None),
}


def _error_body(message: str, error_type: str | None, code: str | None, param: str | None) -> bytes:
    """OpenAI's error JSON: ``{"error": {"message", "type", "param", "code"}}``."""
    error = {"message": message, "type": error_type, "param": param, "code": code}
    return json.dumps({"error": error}).encode()


def _status_fault_answer(step: StatusFault) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for a scripted HTTP error."""
    default_message, default_type, default_code = _STATUS_DEFAULTS.get(
        step.status, (HTTPStatus(step.status).phrase, "server_error", None)
    )
    headers = dict(step.headers)
    if step.retry_after is not None:
        headers["retry-after"] = f"{step.retry_after:g}"
    body = _error_body(
        step.message or default_message,
        step.error_type or default_type,
        step.error_code or default_code,
        step.param,
    )
    return step.status, headers, body


def _context_length_answer(
    step: ContextLengthExceeded, request: RecordedRequest
) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for OpenAI's context-overflow 400, per wire."""
    if request.wire == "responses":
        message = (
            "Your input exceeds the context window of this model. "
            "Please adjust your input and try again."
        )
        param = "input"
    else:
        used = max(step.limit + 1, _estimated_input_tokens(request.body))
        message = (
            f"This model's maximum context length is {step.limit} tokens. However, your messages "
            f"resulted in {used} tokens. Please reduce the length of the messages."
        )
        param = "messages"
    return 400, {}, _error_body(message, "invalid_request_error", "context_length_exceeded", param)


# --------------------------------------------------------------------------
# The script queue
# --------------------------------------------------------------------------


class _Script:
    """Thread-safe queue of steps; repeating steps stay at the head until used up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[Step] = []

    def extend(self, steps: Iterable[Step]) -> None:
        """Append steps to the end of the script."""
        with self._lock:
            self._queue.extend(steps)

    def take(self, first_user_text: str = "") -> Step | None:
        """Consume one use of the first step the request may take (``Step.when``); ``None``
        once no step is left for it."""
        with self._lock:
            index = next(
                (
                    i
                    for i, step in enumerate(self._queue)
                    if step.when is None or step.when in first_user_text
                ),
                None,
            )
            if index is None:
                return None
            head = self._queue[index]
            if head.count is None:
                return head
            if head.count == 1:
                self._queue.pop(index)
            else:
                self._queue[index] = replace(head, count=head.count - 1)
            return replace(head, count=1)

    def remaining(self) -> list[Step]:
        """Steps not yet consumed (with their remaining counts)."""
        with self._lock:
            return list(self._queue)


# --------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that skips reverse DNS and tracks live connections.

    ``HTTPServer.server_bind`` calls ``socket.getfqdn``, which can stall for
    seconds in sandboxes; tracking connections lets ``stop()`` cut idle
    keep-alive sockets instead of leaving their threads blocked on reads.
    """

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], owner: ScriptedModelServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.request_ids = itertools.count(1)
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients hanging up; report real server bugs."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Shut every open client socket so blocked handler threads exit."""
        with self.connections_lock:
            live = list(self.connections)
        for conn in live:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """Routes one HTTP request to the owning :class:`ScriptedModelServer`."""

    protocol_version = "HTTP/1.1"  # keep-alive and chunked streaming
    server: _HTTPServer
    timeout = 60
    # Writes are buffered as a real server's socket buffers are: a stream with no delay goes out
    # in large pieces whatever the two threads' timing (the stdlib default, 0, is one send per
    # event). Delays, pauses and drops flush first, so paced streams still arrive piece by piece.
    wbufsize = 64 * 1024

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.connections_lock:
                self.server.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # stdlib signature
        """Silence per-request logging; tests inspect ``server.requests`` instead."""

    def do_GET(self) -> None:  # stdlib naming
        self.server.owner._handle(self, None)

    def do_POST(self) -> None:  # stdlib naming
        self.server.owner._handle(self, self._read_body())

    def do_DELETE(self) -> None:  # stdlib naming
        self.server.owner._handle(self, self._read_body())

    def _read_body(self) -> bytes:
        """Read the request body, by Content-Length or chunked encoding."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            return self._read_chunked()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _read_chunked(self) -> bytes:
        """Decode a chunked request body (some HTTP clients send one)."""
        data = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(data)
            data.extend(self.rfile.read(size))
            self.rfile.readline()

    # -- writing ----------------------------------------------------------

    def send_json(
        self,
        status: int,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        truncate_to: int | None = None,
    ) -> None:
        """Send a JSON answer; ``truncate_to`` cuts the body and drops the socket."""
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("x-request-id", self._request_id())
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if truncate_to is None:
            self.wfile.write(body)
            return
        self.wfile.write(body[:truncate_to])
        self.drop_connection()

    def send_page(
        self, status: int, content_type: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        """Send ``body`` whole, as a web server answers a GET of a static page."""
        self.send_response(status)
        if content_type:
            self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def send_stream(
        self,
        frames: Sequence[bytes],
        delay: float,
        drop_after: int | None = None,
        pause: tuple[int, float] | None = None,
        keepalive: float = 0.0,
    ) -> None:
        """Stream SSE frames with chunked encoding, optionally cutting off early, or going
        silent before frame ``pause[0]`` for ``pause[1]`` seconds (but for a keep-alive comment
        every ``keepalive`` seconds, when given)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", self._request_id())
        self.end_headers()
        for number, frame in enumerate(frames):
            if drop_after is not None and number >= drop_after:
                self.drop_connection()
                return
            if pause is not None and number == pause[0] and self.pause(pause[1], keepalive):
                return
            if delay and number and _is_generated(frame):
                self.wfile.flush()
                time.sleep(delay)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        if drop_after is not None:
            self.drop_connection()
            return
        self.wfile.write(b"0\r\n\r\n")

    def pause(self, seconds: float, keepalive: float = 0.0) -> bool:
        """Send nothing for ``seconds`` (but ``: keepalive`` comments every ``keepalive``
        seconds, when given); True when the server is stopping meanwhile."""
        self.wfile.flush()
        if not keepalive:
            return self.server.owner.stopping.wait(seconds)
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.server.owner.stopping.wait(min(keepalive, left)):
                return True
            comment = b": keepalive\n\n"
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(comment), comment))
                self.wfile.flush()
            except OSError:  # the client has given up on the answer
                return True
        return False

    def _request_id(self) -> str:
        """A fresh ``x-request-id``, which the SDK surfaces as ``_request_id``."""
        return f"req_{next(self.server.request_ids)}"

    def drop_connection(self) -> None:
        """Close the socket mid-response, as a crashed upstream would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


class ScriptedModelServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers from a script.

    Use it as a context manager (or call :meth:`start`/:meth:`stop`). Every
    request to a completions endpoint consumes the next step; when the script
    runs out the server answers 500 "script exhausted" with
    ``x-should-retry: false`` so a test that forgot a step fails at once
    instead of after the client's retries.
    """

    def __init__(
        self,
        *steps: Step,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = ("test-model",),
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self._address = (host, port)
        self._models = tuple(models)
        self._log_path = Path(log_path) if log_path is not None else None
        self._script = _Script()
        self._script.extend(steps)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._all_requests: list[RecordedRequest] = []
        self._serial = 0
        self._call_counter = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()
        """Set by :meth:`stop`, so that stalled answers stop waiting."""
        self.answered: list[tuple[int, float]] = []
        """``(request index, time.monotonic())`` once each completion's answer was all sent."""
        self.window: int | None = None
        """When set, a reply step whose request counts more input tokens than this is
        answered with the context-overflow error instead, as a real model's window would."""
        self.catalog: dict[str, dict[str, Any]] = {}
        """More fields for a model's ``/v1/models`` entry (vLLM's ``max_model_len``,
        OpenRouter's ``architecture``, ``context_length``, ``pricing``); a model named here is
        listed even when ``models`` does not name it."""
        self.ollama_show: dict[str, dict[str, Any]] = {}
        """Ollama's ``POST /api/show`` answer by model; another model is a 404, as Ollama's."""
        self.lmstudio_models: dict[str, dict[str, Any]] = {}
        """LM Studio's ``GET /api/v0/models/{model}`` answer by model; another is a 404."""
        self.input_scale: float | None = None
        """When set, the input tokens reported (unscripted usage) are OpenAI's count for the
        request times this factor, whatever the model: a provider whose tokenizer counts
        differently from o200k."""
        self.files = FilesApi()
        """The Files API (``/v1/files``): stored files, upload faults, the clock, and the
        Files requests received (which use no script step)."""
        self.pages: dict[str, tuple[int, str, bytes]] = {}
        """Static answers to ``GET path`` (the path without its query or a trailing ``/``):
        ``(status, content type, body)``; ``""`` as the type sends no ``Content-Type``."""
        self.redirects: dict[str, str] = {}
        """``GET path`` answered 302 with this ``Location`` (absolute, or a path on this server)."""
        self.litellm_model_info: dict[str, dict[str, Any]] = {}
        """LiteLLM's proxy ``GET /model/info``: each model's ``model_info`` by model name, answered
        in its shape (``{"data": [{"model_name", "litellm_params", "model_info"}]}``); while empty,
        the path is unknown (a 404), as on any other server."""
        self.imitate: LlamaCppPython | None = None
        """When set, Chat Completions requests are held to llama-cpp-python's request types (a
        500 without using a step when one breaks them), a prompt over its ``n_ctx`` gets an
        empty event stream, and streams carry no usage (``tests/support/llama_cpp_wire.py``)."""
        self.keep_bodies = True
        """False: a completion's body is dropped once it is answered (its index, times and
        step stay), so that a benchmark of thousands of requests does not hold them all."""

    # -- lifecycle --------------------------------------------------------

    def start(self) -> Self:
        """Bind the port and serve from a background thread."""
        if self._httpd is not None:
            return self
        self.stopping.clear()
        self._httpd = _HTTPServer(self._address, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"model-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut open connections; safe to call twice."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses --------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (the OS picks one when constructed with ``port=0``)."""
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Root URL, without the ``/v1`` prefix."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def base_url(self) -> str:
        """What to pass as ``base_url`` to ChatOpenAI / the openai SDK."""
        return f"{self.url}/v1"

    # -- scripting and inspection -----------------------------------------

    def script(self, *steps: Step) -> Self:
        """Append steps to the script (can be called again mid-test)."""
        self._script.extend(steps)
        return self

    @property
    def remaining(self) -> list[Step]:
        """Steps not yet consumed; a ``forever`` step is never consumed."""
        return self._script.remaining()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Completion requests received so far, in arrival order (one per step used)."""
        with self._lock:
            return list(self._requests)

    @property
    def all_requests(self) -> list[RecordedRequest]:
        """Every request, including ``/v1/models`` and unknown paths."""
        with self._lock:
            return list(self._all_requests)

    def messages(self, index: int) -> list[Any]:
        """The raw messages/input items of completion request ``index``."""
        return self.requests[index].messages

    def transcript(self, index: int) -> list[tuple[str, str]]:
        """Wire-independent ``(role, text)`` history of completion request ``index``."""
        return self.requests[index].transcript()

    def system_text(self, index: int) -> str:
        """The system instructions of completion request ``index``, on either wire."""
        return "\n".join(text for role, text in self.transcript(index) if role == "system")

    # -- request handling (called from handler threads) -------------------

    def _handle(self, handler: _Handler, raw_body: bytes | None) -> None:
        """Parse, record and answer one request; never leave the client hanging."""
        path = handler.path.split("?", 1)[0].rstrip("/") or "/"
        files_request = self.files.serves(path)  # multipart, not JSON
        try:
            body = json.loads(raw_body) if raw_body and not files_request else None
        except ValueError:
            message = "We could not parse the JSON body of your request."
            handler.send_json(400, _error_body(message, "invalid_request_error", None, None))
            return
        try:
            if files_request:
                self._serve_files(handler, path, raw_body or b"")
            else:
                self._route(handler, path, body, raw_body or b"")
        except OSError:
            handler.close_connection = True
        except Exception as exc:  # noqa: BLE001 - a bug here must surface in the test, not hang it
            message = f"model server bug: {type(exc).__name__}: {exc}"
            body = _error_body(message, "server_error", "scripted_server_bug", None)
            handler.send_json(500, body, {"x-should-retry": "false"})

    def _route(self, handler: _Handler, path: str, body: Any, raw_body: bytes = b"") -> None:
        """Dispatch by method and path."""
        method = handler.command
        if method == "GET" and path == CONTROL_REQUESTS_PATH:
            payload = [r.to_dict() for r in self.requests]
            handler.send_json(200, json.dumps(payload).encode())
            return
        if method == "POST" and path == CONTROL_SCRIPT_PATH:
            self.script(*steps_from_json(body or []))
            handler.send_json(200, json.dumps({"remaining": len(self.remaining)}).encode())
            return
        is_completion = method == "POST" and (path in CHAT_PATHS or path in RESPONSES_PATHS)
        refusal, refused = self._refusal(path, body) if is_completion else (None, None)
        step, request = self._record(
            handler, path, body, consume=is_completion, raw_body=raw_body, refused=refused
        )
        if method == "GET" and path in MODELS_PATHS:
            handler.send_json(200, self._models_body())
        elif method == "POST" and path == OLLAMA_SHOW_PATH:
            self._send_known(
                handler, self.ollama_show.get(str((body or {}).get("model", ""))), "model not found"
            )
        elif method == "GET" and path in LITELLM_MODEL_INFO_PATHS and self.litellm_model_info:
            data = [
                {"model_name": m, "litellm_params": {"model": f"openai/{m}"}, "model_info": info}
                for m, info in self.litellm_model_info.items()
            ]
            handler.send_json(200, json.dumps({"data": data}).encode())
        elif method == "GET" and path.startswith(LMSTUDIO_MODELS_PREFIX):
            self._send_known(
                handler,
                self.lmstudio_models.get(unquote(path[len(LMSTUDIO_MODELS_PREFIX) :])),
                "model not found",
            )
        elif method == "GET" and path in self.redirects:
            handler.send_page(302, "text/plain", b"moved", {"location": self.redirects[path]})
        elif method == "GET" and path in self.pages:
            status, content_type, page = self.pages[path]
            handler.send_page(status, content_type, page)
        elif refusal is not None:
            handler.send_json(refusal.status, refusal.body, refusal.headers)
            with self._lock:
                self.answered.append((request.index, time.monotonic()))
        elif is_completion:
            if not self.keep_bodies:  # before the answer, which the client may act on at once
                with self._lock:
                    self._drop_body(request)
            self._answer(handler, request, step)
            handler.wfile.flush()
            with self._lock:
                self.answered.append((request.index, time.monotonic()))
        else:
            message = f"Unknown request URL: {method} {path}."
            handler.send_json(
                404, _error_body(message, "invalid_request_error", "unknown_url", None)
            )

    def _refusal(self, path: str, body: Any) -> tuple[Answer | None, str | None]:
        """The error a completion request gets before the script is asked, and why."""
        if (answer := self.files.refusal(body)) is not None:
            return answer, INVALID_FILE_CODE
        if self.imitate is not None and path in CHAT_PATHS and (problems := request_problems(body)):
            return Answer(500, server_error_body(problems)), LLAMA_CPP_INVALID
        return None, None

    def _drop_body(self, request: RecordedRequest) -> None:
        """Keep ``request`` without its body (the caller holds the lock)."""
        light = replace(request, body=None, raw_body=b"")
        for kept in (self._requests, self._all_requests):
            for i in range(len(kept) - 1, -1, -1):
                if kept[i] is request:
                    kept[i] = light
                    break

    def _serve_files(self, handler: _Handler, path: str, raw_body: bytes) -> None:
        """Answer a Files API request: kept in ``all_requests`` and ``files.requests``, never a
        completion, so it uses no script step."""
        self._record(handler, path, None, consume=False, raw_body=raw_body)
        answer = self.files.handle(
            handler.command, handler.path, dict(handler.headers.items()), raw_body
        )
        handler.send_json(answer.status, answer.body, answer.headers)

    def _record(
        self,
        handler: _Handler,
        path: str,
        body: Any,
        consume: bool,
        raw_body: bytes = b"",
        refused: str | None = None,
    ) -> tuple[Step | None, RecordedRequest]:
        """Take the next step (for completions the server does not refuse) and record the
        request atomically; a refused completion is still one of ``requests``."""
        with self._lock:
            take = consume and refused is None
            step = self._script.take(_first_user_text(path, body)) if take else None
            request = RecordedRequest(
                index=len(self._requests) if consume else -1,
                method=handler.command,
                path=path,
                headers={k.lower(): v for k, v in handler.headers.items()},
                body=body,
                received_at=time.monotonic(),
                step=step,
                raw_body=raw_body,
                refused=refused,
            )
            self._all_requests.append(request)
            if consume:
                self._requests.append(request)
                self._append_log(request)
            return step, request

    def _append_log(self, request: RecordedRequest) -> None:
        """Append one JSON line to the request log, if one was configured."""
        if self._log_path is None:
            return
        with self._log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(request.to_dict()) + "\n")

    def _models_body(self) -> bytes:
        """The ``/v1/models`` list, with each model's ``catalog`` fields."""
        created = int(time.time())
        names = [*self._models, *(m for m in self.catalog if m not in self._models)]
        data = [
            {
                "id": m,
                "object": "model",
                "created": created,
                "owned_by": "dcode-tests",
                **self.catalog.get(m, {}),
            }
            for m in names
        ]
        return json.dumps({"object": "list", "data": data}).encode()

    @staticmethod
    def _send_known(handler: _Handler, answer: dict[str, Any] | None, missing: str) -> None:
        if answer is None:
            handler.send_json(404, json.dumps({"error": missing}).encode())
        else:
            handler.send_json(200, json.dumps(answer).encode())

    def _next_ids(self, calls: int) -> tuple[int, Iterator[int]]:
        """A serial number for response ids and ``calls`` fresh tool-call numbers."""
        with self._lock:
            self._serial += 1
            first = self._call_counter + 1
            self._call_counter += calls
            return self._serial, iter(range(first, first + calls))

    def _resolve(self, step: Reply, request: RecordedRequest) -> _Answer:
        """Fix ids and usage for a reply step."""
        serial, call_ids = self._next_ids(len(step.tool_calls))
        return _resolve_answer(step, request, serial, call_ids, self.input_scale)

    def _answer(self, handler: _Handler, request: RecordedRequest, step: Step | None) -> None:
        """Render the consumed step for the request's wire."""
        if step is None:
            message = (
                f"script exhausted: no scripted step left for request #{request.index} "
                f"({request.method} {request.path})"
            )
            body = _error_body(message, "server_error", "script_exhausted", None)
            handler.send_json(500, body, {"x-should-retry": "false"})
        elif isinstance(step, StatusFault):
            status, headers, body = _status_fault_answer(step)
            handler.send_json(status, body, headers)
        elif isinstance(step, ContextLengthExceeded):
            status, headers, body = _context_length_answer(step, request)
            handler.send_json(status, body, headers)
        elif isinstance(step, FileError):
            ids = referenced_file_ids(request.body) if step.ids is None else list(step.ids)
            answer = invalid_file_answer(ids, step.named)
            handler.send_json(answer.status, answer.body, answer.headers)
        elif (
            isinstance(step, Reply)
            and self.imitate is not None
            and _estimated_input_tokens(request.body) > self.imitate.n_ctx
        ):
            self._send_over_n_ctx(handler, request, self.imitate.n_ctx)
        elif (
            isinstance(step, Reply)
            and self.window is not None
            and _estimated_input_tokens(request.body) > self.window
        ):
            status, headers, body = _context_length_answer(
                ContextLengthExceeded(limit=self.window), request
            )
            handler.send_json(status, body, headers)
        elif isinstance(step, Reply):
            self._send_reply(handler, request, step, drop_after=None, garbage=None)
        elif isinstance(step, DropMidStream):
            partial = Reply(text=step.text, chunk_size=4)
            self._send_reply(handler, request, partial, drop_after=step.after_chunks, garbage=None)
        elif isinstance(step, MalformedChunk):
            corrupted = Reply(text=step.text)
            self._send_reply(
                handler, request, corrupted, drop_after=step.after_chunks, garbage=step.garbage
            )
        elif isinstance(step, StallBeforeHeaders):
            if not handler.pause(step.seconds):
                self._send_reply(
                    handler, request, Reply(text=step.text), drop_after=None, garbage=None
                )
        elif isinstance(step, StallMidStream):
            paused = Reply(text=step.text, chunk_size=4)
            self._send_reply(
                handler,
                request,
                paused,
                drop_after=None,
                garbage=None,
                pause=(step.after_chunks, step.seconds),
                keepalive=step.keepalive,
            )
        else:
            raise TypeError(f"unsupported step {step!r}")

    @staticmethod
    def _send_over_n_ctx(handler: _Handler, request: RecordedRequest, n_ctx: int) -> None:
        """llama-cpp-python's answer to a prompt over its context: a stream fails after its
        headers (an event stream without events); a plain answer is its context-length 400."""
        if request.stream:
            handler.send_stream([], 0.0)
            return
        used = _estimated_input_tokens(request.body)
        message = (
            f"This model's maximum context length is {n_ctx} tokens. However, you requested {used} tokens "
            f"({used} in the messages, None in the completion). Please reduce the length of the messages or completion."
        )
        handler.send_json(
            400,
            _error_body(message, "invalid_request_error", "context_length_exceeded", "messages"),
        )

    def _send_reply(
        self,
        handler: _Handler,
        request: RecordedRequest,
        step: Reply,
        drop_after: int | None,
        garbage: str | None,
        pause: tuple[int, float] | None = None,
        keepalive: float = 0.0,
    ) -> None:
        """Send a reply, possibly cut after ``drop_after`` chunks, corrupted by ``garbage`` or
        paused before chunk ``pause[0]`` for ``pause[1]`` seconds (a plain JSON answer pauses
        before its headers; a stream sends keep-alive comments meanwhile when ``keepalive``)."""
        answer = self._resolve(step, request)
        body = request.body if isinstance(request.body, Mapping) else {}
        if not request.stream:
            if pause is not None and handler.pause(pause[1]):
                return
            chat = request.wire == "chat"
            payload = _chat_body(answer) if chat else _responses_body(answer, body)
            encoded = json.dumps(payload).encode()
            half = len(encoded) // 2
            if garbage is not None:  # a complete HTTP response whose JSON is cut short
                handler.send_json(200, encoded[:half])
            else:  # the socket closes after half the promised Content-Length
                handler.send_json(200, encoded, truncate_to=None if drop_after is None else half)
            return
        if request.wire == "chat":
            include_usage = self.imitate is None and bool(
                (body.get("stream_options") or {}).get("include_usage")
            )
            frames = _chat_stream_events(answer, include_usage)
        else:
            frames = _responses_stream_events(answer, body)
        if garbage is not None:
            frames = [*frames[:drop_after], _sse(garbage)]
            drop_after = None
        handler.send_stream(frames, answer.chunk_delay, drop_after, pause, keepalive)


# --------------------------------------------------------------------------
# Subprocess mode
# --------------------------------------------------------------------------


def _write_atomically(path: Path, text: str) -> None:
    """Write via rename so a polling reader never sees a half-written file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def wait_for_port_file(
    path: str | os.PathLike[str],
    timeout: float = 10.0,
    process: subprocess.Popen[Any] | None = None,
) -> str:
    """Wait until a server subprocess has written its base URL; return it.

    Fails fast if ``process`` exits first, so a broken script file shows up as
    a clear error instead of a timeout.
    """
    target = Path(path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if target.exists():
            text = target.read_text(encoding="utf-8").strip()
            if text:
                return text
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"model server exited early with status {process.returncode}")
        time.sleep(0.02)
    raise TimeoutError(f"model server did not write {target} within {timeout} s")


class ModelServerProcess:
    """Runs the scripted server as ``python -m tests.support.model_server``.

    For end-to-end tests where dcode itself runs in another process (CLI,
    tmux): the script goes to a file, the base URL comes back through a port
    file, and requests are read back from the JSON-lines log.
    """

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        workdir: str | os.PathLike[str],
        startup_timeout: float = 10.0,
    ) -> None:
        self._workdir = Path(workdir)
        self._steps = list(steps)
        self._timeout = startup_timeout
        self.script_path = self._workdir / "model-script.json"
        self.port_file = self._workdir / "model-server.url"
        self.log_path = self._workdir / "model-requests.jsonl"
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = ""

    def start(self) -> Self:
        """Spawn the server and wait until it listens."""
        self._workdir.mkdir(parents=True, exist_ok=True)
        write_script(self.script_path, self._steps)
        self.port_file.unlink(missing_ok=True)
        command = [
            sys.executable,
            "-m",
            "tests.support.model_server",
            "--script",
            str(self.script_path),
            "--port-file",
            str(self.port_file),
            "--log",
            str(self.log_path),
        ]
        self.process = subprocess.Popen(command, cwd=_REPO_ROOT, stdout=subprocess.DEVNULL)
        try:
            self.base_url = wait_for_port_file(self.port_file, self._timeout, self.process)
        except BaseException:
            self.stop()
            raise
        return self

    def script(self, *steps: Step) -> None:
        """Append steps to the running server's script."""
        root = self.base_url.removesuffix("/v1")
        data = steps_to_json(steps).encode()
        request = urllib.request.Request(
            f"{root}{CONTROL_SCRIPT_PATH}",
            data=data,
            method="POST",
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()

    def requests(self) -> list[RecordedRequest]:
        """Completion requests the server has logged so far."""
        return read_request_log(self.log_path)

    def stop(self) -> None:
        """Terminate the server process (SIGTERM, then SIGKILL if it lingers)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options of the subprocess mode."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.model_server",
        description="Scripted OpenAI-compatible model server for dcode's tests.",
    )
    parser.add_argument("--script", type=Path, help="JSON file: a list of step dicts")
    parser.add_argument("--port-file", type=Path, help="write the base URL here once listening")
    parser.add_argument("--log", type=Path, help="append each completion request as a JSON line")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 lets the OS pick a free port")
    parser.add_argument("--model", action="append", dest="models", help="model id for /v1/models")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; the base URL goes to stdout and ``--port-file``."""
    args = _parse_args(argv)
    steps = load_script(args.script) if args.script else []
    server = ScriptedModelServer(
        *steps,
        host=args.host,
        port=args.port,
        models=args.models or ("test-model",),
        log_path=args.log,
    )
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    with server:
        if args.port_file:
            _write_atomically(args.port_file, server.base_url + "\n")
        print(f"model server listening on {server.base_url}", flush=True)
        while not stopping.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
