"""The scripted server's strict mode: Chat Completions as llama-cpp-python's server takes it.

llama-cpp-python (``llama_cpp.server``, checked against 0.3.36) validates each request with
pydantic before the model sees it. The rules kept here are those of its request types
(``llama_cpp/llama_types.py``, used by ``CreateChatCompletionRequest.messages`` and ``.tools``
in ``llama_cpp/server/types.py``):

- roles are ``system``, ``user``, ``assistant``, ``tool`` and ``function`` (no ``developer``);
- ``system``: ``content`` (a required key) is a string or null, never a list of parts;
- ``user``: ``content`` is a string, null, or a list of ``text`` and ``image_url`` parts;
- ``assistant``: ``content`` may be left out, but when given it is a string (not null, not
  parts); its ``tool_calls`` have an ``id``, type ``function``, a ``name`` and string
  ``arguments``;
- ``tool``: ``content`` is a string or null and ``tool_call_id`` a string;
- each tool is ``{"type": "function", "function": {"name", "parameters", ...}}``.

A request that breaks one is answered as its server answers any exception
(``RouteErrorHandler`` in ``llama_cpp/server/errors.py``): a 500 whose error message is the
exception's text, with type ``internal_server_error``.

Two more behaviours of that server are kept: a prompt longer than the context (``n_ctx``, 2,048
by default) fails inside the streamed answer after its headers went out
(``get_event_publisher`` in ``llama_cpp/server/app.py``), so the client gets an event stream
with no event at all; and its streams carry no usage chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

ROLES = frozenset({"system", "user", "assistant", "tool", "function"})
DEFAULT_N_CTX = 2048


@dataclass(frozen=True)
class LlamaCppPython:
    """What the scripted server imitates (``ScriptedModelServer.imitate``)."""

    n_ctx: int = DEFAULT_N_CTX
    """The context the server was started with (``--n_ctx``)."""


def request_problems(body: Any) -> list[str]:
    """Where a Chat Completions body breaks llama-cpp-python's request types; empty if nowhere."""
    if not isinstance(body, Mapping):
        return ["body: Input should be a valid dictionary"]
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ["messages: Input should be a valid list"]
    problems = [
        f"messages.{index}.{problem}"
        for index, message in enumerate(messages)
        for problem in _message_problems(message)
    ]
    tools = body.get("tools")
    if tools is not None:
        problems += [
            f"tools.{index}.{problem}"
            for index, tool in enumerate(tools if isinstance(tools, list) else [tools])
            for problem in _tool_problems(tool)
        ]
    return problems


def validation_error_message(problems: list[str]) -> str:
    """The text of the exception the server turns into its 500, worded as pydantic words it."""
    count = len(problems)
    lines = [
        f"{count} validation error{'s' if count != 1 else ''} for CreateChatCompletionRequest",
        *problems,
    ]
    return "\n".join(lines)


def _message_problems(message: Any) -> Iterator[str]:
    if not isinstance(message, Mapping):
        yield "Input should be a valid dictionary"
        return
    role = message.get("role")
    if role not in ROLES:
        yield f"role: Input should be 'system', 'user', 'assistant', 'tool' or 'function' (got {role!r})"
        return
    content = message.get("content")
    match role:
        case "system" | "tool" | "function":
            name = f"ChatCompletionRequest{str(role).capitalize()}Message"
            if "content" not in message:
                yield f"{name}.content: Field required"
            elif content is not None and not isinstance(content, str):
                yield f"{name}.content: Input should be a valid string"
            if role == "tool" and not isinstance(message.get("tool_call_id"), str):
                yield f"{name}.tool_call_id: Field required"
        case "user":
            if "content" not in message:
                yield "ChatCompletionRequestUserMessage.content: Field required"
            elif isinstance(content, list):
                yield from (
                    f"ChatCompletionRequestUserMessage.content.{i}: {p}"
                    for i, part in enumerate(content)
                    for p in _part_problems(part)
                )
            elif content is not None and not isinstance(content, str):
                yield "ChatCompletionRequestUserMessage.content: Input should be a valid string or list"
        case "assistant":
            if "content" in message and not isinstance(content, str):
                yield "ChatCompletionRequestAssistantMessage.content: Input should be a valid string"
            for index, call in enumerate(message.get("tool_calls") or []):
                yield from (
                    f"ChatCompletionRequestAssistantMessage.tool_calls.{index}.{p}"
                    for p in _call_problems(call)
                )


def _part_problems(part: Any) -> Iterator[str]:
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind == "text":
        if not isinstance(part.get("text"), str):
            yield "text: Input should be a valid string"
    elif kind == "image_url":
        url = part.get("image_url")
        if not isinstance(url, str) and not (
            isinstance(url, Mapping) and isinstance(url.get("url"), str)
        ):
            yield "image_url: Input should be a valid string or an object with a url"
    else:
        yield f"type: Input should be 'text' or 'image_url' (got {kind!r})"


def _call_problems(call: Any) -> Iterator[str]:
    if not isinstance(call, Mapping):
        yield "Input should be a valid dictionary"
        return
    function = call.get("function")
    if not isinstance(call.get("id"), str):
        yield "id: Field required"
    if call.get("type") != "function":
        yield "type: Input should be 'function'"
    if (
        not isinstance(function, Mapping)
        or not isinstance(function.get("name"), str)
        or not isinstance(function.get("arguments"), str)
    ):
        yield "function: Input should have a string name and string arguments"


def _tool_problems(tool: Any) -> Iterator[str]:
    function = tool.get("function") if isinstance(tool, Mapping) else None
    if not isinstance(tool, Mapping) or tool.get("type") != "function":
        yield "type: Input should be 'function'"
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        yield "function.name: Field required"
    elif not isinstance(function.get("parameters"), Mapping):
        yield "function.parameters: Field required"


def server_error_body(problems: list[str]) -> bytes:
    """The 500's body, as the server's error handler shapes it."""
    error = {
        "message": validation_error_message(problems),
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
    return json.dumps({"error": error}).encode()
