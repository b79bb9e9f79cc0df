"""Appending a section to a model request's system message (memory, the skills index).

Sections go after what is already there, so the static instructions stay a byte-stable prefix
that provider prompt caches reuse; the checkpointed state is never touched.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import SystemMessage


def with_section(request: ModelRequest, section: str) -> ModelRequest:
    """``request`` with ``section`` appended to its system message (as is when empty)."""
    if not section:
        return request
    blocks: list[Any] = list(request.system_message.content_blocks) if request.system_message else []
    blocks.append({"type": "text", "text": f"\n\n{section}" if blocks else section})
    return request.override(system_message=SystemMessage(content=blocks))
