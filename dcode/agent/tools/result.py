"""What a tool call returned, as one typed value: ``ToolResult``.

A tool builds one; the tool node saves it as a ``ToolMessage`` (``result_message``), and the
live stream and a saved thread's replay read it back from that message the same way, so a
finished call carries its text, media, diff, saved-to path and status instead of each consumer
digging them out of the message again.

Plain data and the standard library only (no LangChain): the event types hold a ``ToolResult``,
and a resumed transcript is painted while the engine is still loading.
"""

# Any: LangChain types a message's content blocks as dicts of any JSON value

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dcode.media.frames import FrameStrip, frames_in

PREVIEW_LINE_CHARS = 120

Block = dict[str, Any]
"""One content block of a result (``{"type": "text", ...}``, an image reference, ...)."""
Content = str | Sequence[str | Block]
"""A result's content as a tool returns it or a ``ToolMessage`` holds it."""


class ToolStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One call's result: what the model got, and what dcode keeps beside it for the screen."""

    text: str
    """The result's text; for a result made of blocks, each text block on a line of its own
    (a media result's summary, its page or frame labels, a video's header and hint)."""
    blocks: tuple[str | Block, ...] = ()
    """The content blocks, for a result that is a list of them (media); ``()`` for text."""
    diff: str = ""
    """The unified diff a write applied, as the tool recorded it; ``""`` for other calls."""
    frames: FrameStrip | None = None
    """The frames a video read returned (their times and attachments), else None."""
    saved_to: str = ""
    """The file holding the call's full output when it was too large for the conversation (the
    model got a preview and this path instead); ``""`` when it was sent whole."""
    status: ToolStatus = ToolStatus.OK
    preview: str = ""
    """The few lines a finished call shows, as its tool's spec displays the result (filled in
    when the result is read back from its message)."""

    @classmethod
    def of(
        cls, content: Content, *, diff: str = "", status: ToolStatus = ToolStatus.OK
    ) -> ToolResult:
        """A result whose content is ``content`` (text, or blocks)."""
        if isinstance(content, str):
            return cls(content, diff=diff, status=status)
        blocks = tuple(content)
        text = "\n".join(texts_in(blocks))
        return cls(text, blocks, diff, frames_in(list(blocks)), status=status)

    @property
    def content(self) -> str | list[str | Block]:
        """What the model gets: the blocks, or the text."""
        return list(self.blocks) if self.blocks else self.text


def texts_in(blocks: Sequence[object]) -> list[str]:
    """The text of each text block (or bare string) in ``blocks``, in order."""
    return [
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in blocks
        if isinstance(block, str)
        or (isinstance(block, dict) and block.get("type") in {"text", "output_text"})
    ]


def preview_result(text: str, lines: int = 3) -> str:
    """The first ``lines`` non-blank-edged lines of a result, with a count of the rest: how a
    finished call shows its result unless its spec says otherwise."""
    all_lines = text.strip("\n").splitlines()
    while all_lines and not all_lines[0].strip():
        all_lines.pop(0)
    shown = [
        _truncate(line.expandtabs(4).rstrip(), PREVIEW_LINE_CHARS) for line in all_lines[:lines]
    ]
    rest = len(all_lines) - len(shown)
    if rest > 0:
        shown.append(f"… (+{rest} more line{'s' if rest != 1 else ''})")
    return "\n".join(shown)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
