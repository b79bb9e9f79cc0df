"""Chat Completions: each message of the history is converted to its wire dict once.

langchain-openai converts every message of the request to the wire's dict on every call
(``_get_request_payload``); the history's messages are the same objects from one call to the
next, so ``converted`` hands it only the messages it has not converted before (found by the
object: ``MessageMemo``) and puts the request back together in order. The conversion of a
Chat Completions message depends on that message alone (one dict per message, in order), which
``tests/test_model_message_dicts.py`` holds it to against the plain ``ChatOpenAI`` body. The
Responses API's input is built from the whole list (items merged across messages), so it is
left to langchain-openai as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage

from dcode.message_memo import MessageMemo

Convert = Callable[[list[BaseMessage]], dict[str, Any]]
"""langchain-openai's payload for some messages: the create() keyword arguments."""

_DICTS: MessageMemo[dict[str, Any]] = MessageMemo()


def converted(input_: Any, convert: Convert) -> dict[str, Any]:
    """``convert(input_)`` for Chat Completions, converting only the messages not converted
    before when ``input_`` is a list of messages."""
    if not isinstance(input_, list) or not input_ or not all(isinstance(m, BaseMessage) for m in input_):
        return convert(input_)
    known = [_DICTS.get(message) for message in input_]
    new = [message for message, found in zip(input_, known, strict=True) if found is None]
    payload = convert(new)
    dicts = payload.get("messages")
    if not isinstance(dicts, list) or len(dicts) != len(new):
        return convert(input_)  # not one dict a message after all: converted as a whole
    fresh = iter(dicts)
    # Each request gets its own dicts (shallow copies): nothing downstream can change the memo's.
    payload["messages"] = [dict(found if found is not None else _DICTS.put(message, next(fresh))) for message, found in zip(input_, known, strict=True)]
    return payload
