"""What a sampled video window's content blocks hold: the frames, their times, the window.

A window (``dcode.media.video.window_blocks``) is a list of content blocks: the header text
(``Reading [a, b) of PATH at 0.5 fps.``), then per frame a ``Frame at t=HH:MM:SS.mmm`` text
block and its image reference block, then the truncation hint when a cap cut the window. The
same list is a read_file result or part of a user's prompt, live or replayed from a saved
session, so the transcript, the tool widget and ``dcode media inspect`` all read the frames off
the blocks with :func:`frames_in`, and describe them with :func:`compact_line`.

Plain data and the standard library only: no Pillow, no PyAV. The bytes a window costs a model
depend on its route; :func:`bytes_for_route` works them out (blocking: call it in a thread).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from dcode.media.attachment import InvalidReferenceBlock, from_reference_block, is_reference_block
from dcode.media.video_text import clock

__all__ = [
    "FrameRef",
    "FrameStrip",
    "Window",
    "bytes_for_route",
    "clock",
    "compact_line",
    "frames_in",
    "timeline",
    "windows_in",
]

if TYPE_CHECKING:
    from dcode.media.limits import ImageRoute
    from dcode.media.store import AttachmentStore

_HEADER = re.compile(
    r"Reading (?:\[(?P<start>\d+(?:\.\d+)?)s, (?P<end>\d+(?:\.\d+)?)s\)|first (?P<limit>\d+(?:\.\d+)?)s)"
    r" of (?P<path>.+?) at [\d.]+ fps\.",
    re.DOTALL,
)
_LABEL = re.compile(r"Frame at t=(?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d)\.(?P<ms>\d{3})")
_CONTINUE = re.compile(r"offset=(?P<at>\d+(?:\.\d+)?)")


@dataclass(frozen=True, slots=True)
class FrameRef:
    """One sampled frame as a message holds it: when, and which attachment."""

    t: float
    attachment_id: str
    width: int
    height: int
    bytes: int


@dataclass(frozen=True, slots=True)
class FrameStrip:
    """The frames of one window, in order, with the window they were sampled from."""

    source: str
    """The video's path as the header names it."""
    frames: tuple[FrameRef, ...]
    start: float | None = None
    end: float | None = None
    continue_at: float | None = None
    """Where the truncation hint says to continue, when a cap cut the window."""

    @property
    def name(self) -> str:
        return PurePath(self.source).name or self.source

    @property
    def first(self) -> float:
        return self.frames[0].t if self.frames else (self.start or 0.0)

    @property
    def last(self) -> float:
        return self.frames[-1].t if self.frames else (self.start or 0.0)


def frames_in(blocks: object) -> FrameStrip | None:
    """The first window in ``blocks`` (a read_file result), or None when it holds no frame."""
    windows = windows_in(blocks)
    return windows[0].strip if windows else None


@dataclass(frozen=True, slots=True)
class Window:
    """A window found in a message's content, and which of its blocks are the window's."""

    strip: FrameStrip
    first_block: int
    end_block: int  # one past the window's last block

    def holds(self, index: int) -> bool:
        return self.first_block <= index < self.end_block


def windows_in(blocks: object) -> list[Window]:
    """Every sampled window in ``blocks``, in order (a prompt may hold several videos).

    A window starts at its header and runs through its frames and its hint; blocks that are
    not part of one (the prompt's text, pasted images) are left out of every window.
    """
    if not isinstance(blocks, list):
        return []
    found: list[Window] = []
    current: _Open | None = None
    pending: float | None = None  # a label's time, waiting for its image
    for index, block in enumerate(blocks):
        text = _text(block)
        if text is not None and (header := _HEADER.search(text)):
            if current is not None:
                found += current.close()
            current = _Open.at(header, index)
            pending = None
            continue
        if current is None:
            continue
        if text is not None:
            if label := _LABEL.fullmatch(text.strip()):
                pending = _seconds(label)
                current.end = index + 1
            elif current.frames and (hint := _CONTINUE.search(text)):
                current.continue_at = float(hint.group("at"))
                current.end = index + 1
                found += current.close()
                current = None
            else:
                found += current.close()
                current = None
            continue
        if pending is not None and is_reference_block(block):
            try:
                att = from_reference_block(block)
            except InvalidReferenceBlock:
                att = None
            if att is not None:
                current.frames.append(
                    FrameRef(pending, att.id, att.width, att.height, att.byte_size)
                )
                current.end = index + 1
                pending = None
                continue
        found += current.close()
        current = None
        pending = None
    if current is not None:
        found += current.close()
    return found


@dataclass(slots=True)
class _Open:
    source: str
    start: float
    end_t: float
    begin: int
    end: int
    frames: list[FrameRef]
    continue_at: float | None = None

    @classmethod
    def at(cls, header: re.Match[str], index: int) -> _Open:
        if header.group("limit") is not None:
            start, end_t = 0.0, float(header.group("limit"))
        else:
            start, end_t = float(header.group("start")), float(header.group("end"))
        return cls(header.group("path"), start, end_t, index, index + 1, [])

    def close(self) -> list[Window]:
        if not self.frames:
            return []
        strip = FrameStrip(
            self.source, tuple(self.frames), self.start, self.end_t, self.continue_at
        )
        return [Window(strip, self.begin, self.end)]


def short_clock(t: float) -> str:
    """``M:SS.s`` (or ``H:MM:SS.s``): a compact time for one-line summaries."""
    tenths = round(t * 10)
    hours, rest = divmod(tenths, 36_000)
    minutes, rest = divmod(rest, 600)
    seconds, tenth = divmod(rest, 10)
    if hours:
        return f"{hours}:{minutes:02d}:{seconds:02d}.{tenth}"
    return f"{minutes}:{seconds:02d}.{tenth}"


def human_bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def compact_line(strip: FrameStrip, sent_bytes: int | None = None) -> str:
    """``clip.mp4 · 3 frames · 0:00.0–0:04.0 · 212.4 KiB sent`` (the bytes once known)."""
    count = len(strip.frames)
    parts = [
        strip.name,
        f"{count} frame{'' if count == 1 else 's'}",
        f"{short_clock(strip.first)}–{short_clock(strip.last)}",
    ]
    if sent_bytes == 0:
        parts.append("not sent: the model takes no images")
    elif sent_bytes is not None:
        parts.append(f"{human_bytes(sent_bytes)} sent")
    if strip.continue_at is not None:
        parts.append(f"cut at {short_clock(strip.continue_at)}")
    return " · ".join(parts)


def timeline(strip: FrameStrip, width: int = 48) -> str:
    """The frames' times on one axis, for terminals that cannot show pictures::

    ●─────●─────●─────●  0:00.0 → 0:06.0
    """
    width = max(8, width)
    first, last = strip.first, strip.last
    span = last - first
    cells = ["─"] * width
    for frame in strip.frames:
        at = 0 if span <= 0 else round((frame.t - first) / span * (width - 1))
        cells[at] = "●"
    return f"{''.join(cells)}  {short_clock(first)} → {short_clock(last)}"


def timestamps(strip: FrameStrip) -> str:
    """Every frame's time, space-separated (``0:00.0 0:02.0 0:04.0``)."""
    return " ".join(short_clock(frame.t) for frame in strip.frames)


def bytes_for_route(frames: Iterable[FrameRef], route: ImageRoute, store: AttachmentStore) -> int:
    """What the frames weigh in a request on ``route``: their request variants' bytes.

    Blocking (it may derive the variants, which the request needs anyway: they are cached).
    A frame missing from the store counts as nothing: the request leaves it out too.
    """
    from dcode.media.errors import MediaError
    from dcode.media.variants import VariantService

    service = VariantService(store)
    total = 0
    try:
        for frame in frames:
            try:
                total += service.get_sync(store.get(frame.attachment_id), route).byte_size
            except (MediaError, OSError):
                continue
    finally:
        service.close()
    return total


def _text(block: object) -> str | None:
    if isinstance(block, str):
        return block
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        return block["text"]
    return None


def _seconds(label: re.Match[str]) -> float:
    return int(label["h"]) * 3600 + int(label["m"]) * 60 + int(label["s"]) + int(label["ms"]) / 1000
