"""Capability scrubbing: a media part the model cannot take becomes a one-line placeholder.

For the request only, on user messages and tool results. Each part is judged by its modality
(``media_policy``), whether it is one of dcode's reference blocks or a standard block some other
tool returned; a refused part becomes a text block that names its path, its kind and its MIME
type, so the model knows what it did not get and the provider never answers 400. Whether a part
may stay *inside* a tool result is placement's question, not this one's: placement moves it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from dcode.agent.media_policy import MediaPolicy
from dcode.media.modality import MediaPart, Modality, media_part


def refusal_placeholder(part: MediaPart, tool: str | None) -> str:
    """``[read_file: docs/a.pdf was not attached because …]``; a pasted part has no tool."""
    prefix = f"{tool}: " if tool else ""
    return (
        f"[{prefix}{part.name} was not attached because this model does not support "
        f"{part.modality} content ({part.mime_type}).]"
    )


@dataclass(frozen=True, slots=True)
class Scrubbed:
    messages: list[BaseMessage]
    refused: frozenset[Modality]


def scrub(messages: list[BaseMessage], policy: MediaPolicy) -> Scrubbed:
    """``messages`` with every refused part replaced (the same list when none is);
    ``refused`` names the modalities hit."""
    refused: set[Modality] = set()
    out: list[BaseMessage] = []
    any_changed = False
    for message in messages:
        if not isinstance(message, HumanMessage | ToolMessage) or not isinstance(message.content, list):
            out.append(message)
            continue
        tool = message.name if isinstance(message, ToolMessage) else None
        content: list[Any] = []
        changed = False
        for block in message.content:
            part = media_part(block)
            if part is None or policy.accepts(part.modality):
                content.append(block)
                continue
            refused.add(part.modality)
            content.append({"type": "text", "text": refusal_placeholder(part, tool)})
            changed = True
        out.append(message.model_copy(update={"content": content}) if changed else message)
        any_changed = any_changed or changed
    return Scrubbed(out if any_changed else messages, frozenset(refused))
