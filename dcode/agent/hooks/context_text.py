"""The context hooks add to a prompt (``UserPromptSubmit``, ``SessionStart``): after the
prompt, in tags the transcript leaves out, so that a replayed prompt reads as it was typed."""

# Any: a prompt's content parts, as langchain types a message's content

from __future__ import annotations

import re
from typing import Any

_OPEN, _CLOSE = "<hook-context>", "</hook-context>"
_ADDED = re.compile(r"\n\n<hook-context>\n.*?\n</hook-context>", re.DOTALL)


def with_context(
    content: str | list[dict[str, Any]], context: list[str]
) -> str | list[dict[str, Any]]:
    """The prompt with the hooks' added context after it."""
    if not context:
        return content
    added = "".join(f"\n\n{_OPEN}\n{text}\n{_CLOSE}" for text in context)
    if isinstance(content, str):
        return content + added
    return [*content, {"type": "text", "text": added}]


def without_context(text: str) -> str:
    """``text`` less the context hooks added to it."""
    return _ADDED.sub("", text) if _OPEN in text else text
