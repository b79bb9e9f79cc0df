"""Capability scrubbing: a media part the model cannot take becomes a one-line placeholder.

For the request only, on user messages and tool results. Each part is judged by its modality
(``media_policy``), whether it is one of dcode's reference blocks or a standard block some other
tool returned; a refused part becomes a text block that names its path, its kind and its MIME
type, so the model knows what it did not get and the provider never answers 400. Whether a part
may stay *inside* a tool result is placement's question: placement moves it out, and
``scrub_tool_results`` then catches what no batch claimed (a result whose call is gone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from dcode.agent.media_policy import MediaPolicy
from dcode.media.modality import MediaPart, Modality, media_part


def refusal_placeholder(part: MediaPart, tool: str | None, *, where: str = "") -> str:
    """``[read_file: docs/a.pdf was not attached because …]``; a pasted part has no tool."""
    prefix = f"{tool}: " if tool else ""
    return (
        f"[{prefix}{part.name} was not attached because this model does not support "
        f"{part.modality} content ({part.mime_type}){where}.]"
    )


@dataclass(frozen=True, slots=True)
class Scrubbed:
    messages: list[BaseMessage]
    refused: frozenset[Modality]


Refuses = Callable[[BaseMessage, MediaPart], str | None]
"""The placeholder for a part of a message, or None to keep the part."""


def scrub(messages: list[BaseMessage], policy: MediaPolicy) -> Scrubbed:
    """Every part of a user message or tool result whose modality the model refuses, replaced."""

    def refuses(message: BaseMessage, part: MediaPart) -> str | None:
        return None if policy.accepts(part.modality) else refusal_placeholder(part, _tool(message))

    return _replace(messages, refuses)


def scrub_tool_results(messages: list[BaseMessage], policy: MediaPolicy) -> Scrubbed:
    """After placement: a part left in a tool result where the model takes none of its kind
    (a result no batch claims) is replaced too."""

    def refuses(message: BaseMessage, part: MediaPart) -> str | None:
        if not isinstance(message, ToolMessage) or policy.stays_in_tool(part.modality):
            return None
        return refusal_placeholder(part, _tool(message), where=" in a tool result")

    return _replace(messages, refuses)


def _replace(messages: list[BaseMessage], refuses: Refuses) -> Scrubbed:
    """``messages`` with each refused part replaced (the same list when none is); ``refused``
    names the modalities hit."""
    refused: set[Modality] = set()
    out: list[BaseMessage] = []
    any_changed = False
    for message in messages:
        if not isinstance(message, HumanMessage | ToolMessage) or not isinstance(
            message.content, list
        ):
            out.append(message)
            continue
        content: list[object] = []
        changed = False
        for block in message.content:
            part = media_part(block)
            placeholder = None if part is None else refuses(message, part)
            if placeholder is None:
                content.append(block)
                continue
            assert part is not None
            refused.add(part.modality)
            content.append({"type": "text", "text": placeholder})
            changed = True
        out.append(message.model_copy(update={"content": content}) if changed else message)
        any_changed = any_changed or changed
    return Scrubbed(out if any_changed else messages, frozenset(refused))


def _tool(message: BaseMessage) -> str | None:
    return message.name if isinstance(message, ToolMessage) else None
