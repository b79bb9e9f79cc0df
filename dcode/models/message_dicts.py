"""Chat Completions: each message of the history is converted to its wire dict once.

langchain-openai converts every message of the request to the wire's dict on every call
(``_get_request_payload``); the history's messages are the same objects from one call to the
next, so ``converted`` hands it only the messages it has not converted before (found by the
object: ``MessageMemo``) and puts the request back together in order. The conversion of a
Chat Completions message depends on that message alone (one dict per message, in order), which
``tests/test_model_message_dicts.py`` holds it to against the plain ``ChatOpenAI`` body. The
Responses API's input is built from the whole list (items merged across messages), so it is
left to langchain-openai as it is.

Plain strings: langchain-openai sends a message whose content is a list of blocks as a list of
parts, even when every part is text. Some servers take only a string for some roles
(llama-cpp-python's request types: system, assistant and tool content is ``str``), and some chat
templates expect one. So a message whose parts are all plain text (``{"type": "text", "text"}``
and no other key, such as a cache mark) goes as one string: the texts joined, with a newline
where two parts meet without whitespace. A message with any other part keeps its list. The
rule reads the message alone, so a message is sent the same way on every request, and a part
appended to the system message extends its string: the prompt cache's prefix stays the same
bytes.

For the same servers, an assistant message that calls tools and says nothing goes without a
``content`` key rather than with ``null``: Chat Completions makes ``content`` optional when
``tool_calls`` is given, and llama-cpp-python's type for it (``NotRequired[str]``) takes no
``null``.
"""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage

from dcode.models.message_memo import MessageMemo

Convert = Callable[[LanguageModelInput], dict[str, object]]
"""langchain-openai's payload for some messages: the create() keyword arguments."""

_DICTS: MessageMemo[dict[str, object]] = MessageMemo()


def converted(input_: LanguageModelInput, convert: Convert) -> dict[str, object]:
    """``convert(input_)`` for Chat Completions, converting only the messages not converted
    before when ``input_`` is a list of messages."""
    if (
        not isinstance(input_, list)
        or not input_
        or not all(isinstance(m, BaseMessage) for m in input_)
    ):
        return _plain_messages(convert(input_))
    known = [_DICTS.get(message) for message in input_]
    new = [message for message, found in zip(input_, known, strict=True) if found is None]
    payload = convert(new)
    dicts = payload.get("messages")
    if not isinstance(dicts, list) or len(dicts) != len(new):
        return _plain_messages(
            convert(input_)
        )  # not one dict a message after all: converted as a whole
    fresh = iter(dicts)
    # Each request gets its own dicts (shallow copies): nothing downstream can change the memo's.
    payload["messages"] = [
        dict(found if found is not None else _DICTS.put(message, plain_content(next(fresh))))
        for message, found in zip(input_, known, strict=True)
    ]
    return payload


def _plain_messages(payload: dict[str, object]) -> dict[str, object]:
    dicts = payload.get("messages")
    if isinstance(dicts, list):
        payload["messages"] = [plain_content(d) if isinstance(d, dict) else d for d in dicts]
    return payload


def plain_content(message: dict[str, object]) -> dict[str, object]:
    """``message`` (a wire dict) with its content as one string when all its parts are plain
    text, and without a ``null`` content beside tool calls; as it is otherwise (see the
    module's docstring)."""
    content = message.get("content")
    if (
        content is None
        and "content" in message
        and message.get("role") == "assistant"
        and message.get("tool_calls")
    ):
        return {key: value for key, value in message.items() if key != "content"}
    if (
        not isinstance(content, list)
        or not content
        or not all(_plain_text(part) for part in content)
    ):
        return message
    return {**message, "content": _joined([part["text"] for part in content])}


def _plain_text(part: object) -> bool:
    return (
        isinstance(part, dict)
        and part.keys() == {"type", "text"}
        and part["type"] == "text"
        and isinstance(part["text"], str)
    )


def _joined(texts: list[str]) -> str:
    """The texts as one; a newline between two that would otherwise run into each other."""
    out = texts[0]
    for text in texts[1:]:
        glued = not out or not text or out[-1].isspace() or text[0].isspace()
        out += text if glued else f"\n{text}"
    return out
