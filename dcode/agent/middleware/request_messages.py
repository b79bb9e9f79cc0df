"""The messages a middleware hands back to ``ModelRequest.override``.

langchain types a request's messages as ``AnyMessage``, the union of its message classes, while
dcode's message helpers take and give ``BaseMessage``. Every message in a request is one of
those classes, and a rewritten one keeps its class (``model_copy``), so the list is handed on
as it is, under the framework's name for it.
"""

from __future__ import annotations

from typing import cast

from langchain_core.messages import AnyMessage, BaseMessage


def request_messages(messages: list[BaseMessage]) -> list[AnyMessage]:
    return cast("list[AnyMessage]", messages)


def base_messages(messages: list[AnyMessage]) -> list[BaseMessage]:
    """The request's own list (not a copy): a helper that changes nothing hands it back as it is."""
    return cast("list[BaseMessage]", messages)
