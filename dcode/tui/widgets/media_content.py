"""What a sent prompt becomes for the model: its text, then its media in label order.

The ``[image N]`` and ``[video N]`` labels stay in the text, because they are how the user (and
then the model) refers to each one. An image follows as its reference block; a video as the
blocks of its first sampled window (``dcode.media.video_input``: header, frame labels and frame
references). Reference blocks are a few hundred bytes each (Principle 3): the bytes are
projected per request by the middleware, never stored in the message. A prompt without media
stays a plain string.

Sampling a video decodes it, so it happens before this, off the UI thread
(:func:`sample_videos` in a worker); :func:`content_for` is handed the windows and refuses a
video it was not given one for, so a caller that skips the sampling gets a one-line message
instead of a silently dropped video.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from dcode.media.attachment import to_reference_block
from dcode.tui.widgets.media_source import MEDIA_KIND, PENDING_MESSAGE, MediaItem, PendingMedia
from dcode.tui.widgets.placeholders import Placeholder

if TYPE_CHECKING:
    from dcode.media.limits import ImageRoute
    from dcode.media.store import AttachmentStore
    from dcode.media.video_input import SampledVideo

__all__ = [
    "MediaRefused",
    "SubmittedLike",
    "build_content",
    "content_for",
    "media_items",
    "sample_videos",
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


def build_content(
    submitted: SubmittedLike, videos: Mapping[str, SampledVideo] | None = None
) -> tuple[str | list[dict[str, object]], str]:
    """``(content, prompt_text)`` for ``SessionRunner.run_turn(content, prompt_text=...)``.

    ``content`` is ``[{"type": "text", "text": ...}, <media blocks>...]`` when media is bound,
    else the plain text; ``prompt_text`` is the text alone (titles, history). ``videos`` maps
    each ``[video N]`` label to its sampled window (:func:`sample_videos`). Raises
    :class:`MediaRefused` for media still being attached or a video without its window.
    """
    return content_for(submitted.text, submitted.placeholders, videos)


def content_for(
    text: str, placeholders: Iterable[Placeholder], videos: Mapping[str, SampledVideo] | None = None
) -> tuple[str | list[dict[str, object]], str]:
    """:func:`build_content` from parts, e.g. a queued prompt's text and ``draft.placeholders``."""
    tokens = [t for t in placeholders if t.kind == MEDIA_KIND]
    if any(isinstance(t.payload, PendingMedia) and not t.payload.done for t in tokens):
        raise MediaRefused(PENDING_MESSAGE)
    windows = videos or {}
    blocks: list[dict[str, object]] = []
    for item in media_items(tokens):
        if item.attachment is not None:
            blocks.append(to_reference_block(item.attachment))
        elif item.kind == "video":
            sampled = windows.get(item.label)
            if sampled is None:
                raise MediaRefused(f"{item.label} ({item.name}) was not sampled: send it again.")
            blocks.extend(sampled.blocks)
    if not blocks:
        return text, text
    return [{"type": "text", "text": text}, *blocks], text


def sample_videos(
    placeholders: Iterable[Placeholder],
    store: AttachmentStore,
    *,
    workspace: Path | None = None,
    route: ImageRoute | None = None,
    takes_images: bool = True,
) -> dict[str, SampledVideo]:
    """Each bound video's first window, by label. Blocking (it decodes): call it in a thread.

    Raises :class:`MediaRefused` with the first video that cannot be sampled, in one line.
    """
    from dcode.media.video_input import VideoInputError, sample_first_window

    out: dict[str, SampledVideo] = {}
    for item in media_items(placeholders):
        if item.kind != "video" or item.path is None or item.label in out:
            continue
        try:
            out[item.label] = sample_first_window(
                item.path, store, workspace=workspace, route=route, takes_images=takes_images
            )
        except VideoInputError as exc:
            raise MediaRefused(f"{item.label} {exc}") from None
    return out
