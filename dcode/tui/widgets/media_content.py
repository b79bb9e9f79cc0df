"""What a sent prompt becomes for the model: its text plus one reference block per image.

The ``[image N]`` labels stay in the text, because they are how the user (and then the model)
refers to each picture; the images follow as reference blocks in the order their labels appear.
Reference blocks are a few hundred bytes each (Principle 3): the bytes are projected per request
by the middleware, never stored in the message. A prompt without images stays a plain string.

Videos are tracked in the box but cannot be sent yet. The box refuses to send a draft that holds
one (``MediaSource.allow_submit``); :func:`build_content` refuses too, so a caller that skips the
box gets the same one-line message instead of a silently dropped video.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from dcode.media.attachment import to_reference_block
from dcode.tui.widgets.media_source import (
    MEDIA_KIND,
    PENDING_MESSAGE,
    MediaItem,
    PendingMedia,
    video_refusal,
)
from dcode.tui.widgets.placeholders import Placeholder

__all__ = [
    "MediaRefused",
    "SubmittedLike",
    "build_content",
    "content_for",
    "media_items",
    "video_refusal",
]


class SubmittedLike(Protocol):
    """``PromptInput.Submitted``, or anything with its text and bound tokens."""

    @property
    def text(self) -> str: ...

    @property
    def placeholders(self) -> tuple[Placeholder, ...]: ...


class MediaRefused(Exception):
    """The prompt cannot be sent as it is; ``message`` is one line for a toast."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def media_items(placeholders: Iterable[Placeholder]) -> list[MediaItem]:
    """The media bound in a draft or a sent prompt, in document order."""
    tokens = sorted(placeholders, key=lambda token: token.start)
    return [t.payload for t in tokens if t.kind == MEDIA_KIND and isinstance(t.payload, MediaItem)]


def build_content(submitted: SubmittedLike) -> tuple[str | list[dict[str, Any]], str]:
    """``(content, prompt_text)`` for ``SessionRunner.run_turn(content, prompt_text=...)``.

    ``content`` is ``[{"type": "text", "text": ...}, <reference block>, ...]`` when images are
    bound, else the plain text; ``prompt_text`` is the text alone (titles, history). Raises
    :class:`MediaRefused` for a video or for media still being attached.
    """
    return content_for(submitted.text, submitted.placeholders)


def content_for(
    text: str, placeholders: Iterable[Placeholder]
) -> tuple[str | list[dict[str, Any]], str]:
    """:func:`build_content` from parts, e.g. a queued prompt's text and ``draft.placeholders``."""
    tokens = [t for t in placeholders if t.kind == MEDIA_KIND]
    if any(isinstance(t.payload, PendingMedia) and not t.payload.done for t in tokens):
        raise MediaRefused(PENDING_MESSAGE)
    items = media_items(tokens)
    videos = [item.label for item in items if item.kind == "video"]
    if videos:
        raise MediaRefused(video_refusal(videos))
    blocks = [to_reference_block(item.attachment) for item in items if item.attachment is not None]
    if not blocks:
        return text, text
    return [{"type": "text", "text": text}, *blocks], text
