"""Video frame sampling: a window of a video becomes JPEG frames in the attachment store.

``read_file`` on a video (and a ``[video N]`` in the prompt) calls :func:`sample_window`, then
:func:`window_blocks` for the tool result: a header, a ``Frame at t=HH:MM:SS.mmm`` label and
an image reference per frame, and a hint with the offset to continue from when a cap cut the
window. Frames are admitted like pasted images (the same normalization and store), so
history holds references and every request gets the route's variant of each frame.

Windows are sampled at 0.5 fps: ``offset`` is the seconds to skip (negative is clamped to 0)
and ``limit`` the seconds to cover. The limits (:class:`VideoLimits`):
- input: 1 GiB at most; a frame side over 4096 px is refused, not shrunk;
- frames with more pixels than 1920×1080 are scaled down to that area (aspect kept, so a
  portrait 1080×1920 stays as it is), JPEG quality 85;
- at most 64 frames, and at most 4 MiB *emitted*. With references in history there is no
  base64 in the result, so "emitted" is what the result would weigh inlined: the UTF-8 bytes
  of its text plus the base64 length of each frame's stored JPEG. That is also the most any
  route's variant of the frames can add to a request (variants never upscale), and it does not
  depend on the model, so a window reads the same on every route. When a cap is reached the
  window is cut at a frame boundary and the hint says where to continue; a first frame that
  alone is over the byte cap is an error;
- a 10 s wall-clock deadline over the whole read. Decoding runs in a separate process
  (``video_client``, ``video_worker``) that is killed at the deadline, so a stuck decoder
  really stops, and a decoder crash is an error instead of the end of the session.

Re-reading a window decodes nothing: ``video_cache`` remembers which attachment each grid
instant became, keyed by the file's identity (see there for why that key is both cheap and
safe). And since attachments are content-addressed, even a decode stores nothing new.

Every failure is a :class:`VideoError` whose text completes ``Error reading video PATH: …``.
Without PyAV, :func:`video_support` says why and how to install it, and
:func:`video_fallback_blocks` gives what read_file returns instead.

This module does not import PyAV or Pillow itself (the decoder process does), so importing it
is cheap.
"""

# Any: a video's facts are JSON read from the sampling worker's pipe and from the cache file

from __future__ import annotations

import functools
import math
import os
import stat
import sys
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from dcode.media.attachment import Attachment, to_reference_block
from dcode.media.errors import AdmissionError, AttachmentUnavailableError, MediaError
from dcode.media.limits import MiB
from dcode.media.store import AttachmentStore
from dcode.media.video_cache import FrameIndex, file_key
from dcode.media.video_client import DeadlineExceeded, WorkerGone, run_job
from dcode.media.video_grid import Grid
from dcode.media.video_protocol import Message
from dcode.media.video_text import (
    CapReason,
    clock,
    frame_label,
    header_text,
    hint_text,
    no_frames_text,
    plain_seconds,
    summary_line,
)

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_VIDEO",
    "SAMPLE_INTERVAL",
    "SampledFrame",
    "VideoError",
    "VideoLimits",
    "VideoWindow",
    "error_text",
    "sample_window",
    "video_support",
    "window_blocks",
    "window_summary",
]

GiB = 1024 * MiB
SAMPLE_INTERVAL = 2.0
"""Seconds between targets: 0.5 fps."""
DEFAULT_LIMIT = 100.0
VIDEO_POLICY_VERSION = 1
"""Bump when the code changes which frame a target gets or how it is encoded."""
_HINT_RESERVE = 400
"""Bytes kept free for the hint, so that a cut window still fits with it."""


class VideoError(MediaError):
    """A video could not be read; ``str()`` completes ``Error reading video PATH: …``."""


def error_text(shown: str, error: VideoError) -> str:
    """The tool error read_file shows for ``error``."""
    return f"Error reading video {shown}: {error}"


@dataclass(frozen=True, slots=True)
class VideoLimits:
    max_input_bytes: int = 1 * GiB
    max_frames: int = 64
    max_emitted_bytes: int = 4 * MiB
    max_side: int = 4096
    max_frame_pixels: int = 1920 * 1080
    jpeg_quality: int = 85
    deadline_seconds: float = 10.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not value > 0:
                raise ValueError(f"VideoLimits.{f.name} must be > 0, got {value}")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError(f"VideoLimits.jpeg_quality must be 1..100, got {self.jpeg_quality}")


DEFAULT_VIDEO = VideoLimits()


@dataclass(frozen=True, slots=True)
class SampledFrame:
    t: float
    """Seconds from the stream's start."""
    attachment: Attachment


@dataclass(frozen=True, slots=True)
class VideoWindow:
    path: Path
    offset: float
    """The window asked for: ``[offset, offset + limit)``."""
    limit: float
    frames: tuple[SampledFrame, ...]
    continue_at: float | None
    """Where to continue when a cap cut the window, else None."""
    duration: float | None
    width: int
    """The source's displayed size (rotation and pixel aspect applied)."""
    height: int
    cut_by: CapReason | None = None
    """Which cap cut the window (``frames`` or ``output``), when one did."""

    @property
    def end(self) -> float:
        return self.offset + self.limit

    @property
    def frame_bytes(self) -> int:
        """The stored bytes of the frames (what a route's variants start from)."""
        return sum(f.attachment.byte_size for f in self.frames)


def window_blocks(window: VideoWindow, shown: str) -> list[dict[str, object]]:
    """The window's content: the header, then label + image reference per frame, then the
    hint when a cap cut the window (always the last block).

    A read_file result is :func:`window_summary` followed by these blocks: the summary stays
    in the ToolMessage, and these move as one unit wherever the request puts media."""
    blocks: list[dict[str, object]] = [_text(header_text(shown, window.offset, window.limit))]
    for frame in window.frames:
        blocks.append(_text(frame_label(frame.t)))
        blocks.append(to_reference_block(frame.attachment))
    if window.continue_at is not None:
        blocks.append(_text(hint_text(window.continue_at)))
    return blocks


def window_summary(window: VideoWindow, shown: str) -> str:
    """``Read video PATH: sampled 12 frames.``: the first block of a read_file result."""
    return summary_line(shown, len(window.frames))


def _text(text: str) -> dict[str, object]:
    return {"type": "text", "text": text}


@functools.cache
def video_support() -> str | None:
    """None when frames can be sampled here; otherwise why not, and how to enable it."""
    return _unusable("av", "PyAV", "av") or _unusable("PIL.Image", "Pillow", "pillow")


def _unusable(module: str, package: str, pip_name: str) -> str | None:
    """Why ``module`` cannot be imported (missing, or installed but broken), with the fix."""
    import importlib

    pip = f"{sys.executable} -m pip install"
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module.split(".")[0]:
            return (
                f"video frame sampling needs {package} (the {pip_name} package), which is not "
                f"installed; install it into dcode's environment: {pip} {pip_name} "
                f"(pipx: pipx inject dcode {pip_name})"
            )
        return _broken(package, pip_name, pip, exc)
    except Exception as exc:  # noqa: BLE001 - a broken binary wheel raises OSError, ImportError...
        return _broken(package, pip_name, pip, exc)
    return None


def _broken(package: str, pip_name: str, pip: str, exc: BaseException) -> str:
    return (
        f"video frame sampling needs {package}, which is installed but does not load "
        f"({type(exc).__name__}: {exc}); reinstall it: {pip} --force-reinstall {pip_name}"
    )


# -- sampling ------------------------------------------------------------------------------


def sample_window(
    path: Path,
    *,
    store: AttachmentStore,
    offset: float = 0.0,
    limit: float = DEFAULT_LIMIT,
    limits: VideoLimits = DEFAULT_VIDEO,
) -> VideoWindow:
    """Sample ``[offset, offset + limit)`` of ``path`` into ``store``; raises :class:`VideoError`.

    Blocking (decoding, disk): callers on the event loop use ``asyncio.to_thread``.
    """
    offset, limit = _checked_window(offset, limit)
    reason = video_support()
    if reason is not None:
        raise VideoError(reason)
    file = Path(path)
    info = _checked_file(file, limits)
    deadline = time.monotonic() + limits.deadline_seconds
    try:
        index = FrameIndex.load(store.root, file_key(file, info, _policy(store, limits)))
    except OSError as exc:
        raise VideoError(f"cannot read it ({exc.strerror or exc})") from exc
    grid = Grid(offset, limit, SAMPLE_INTERVAL)
    window = _replay(file, store, grid, limits, index)
    if window is None:
        window = _decode(file, store, grid, limits, index, deadline)
    index.save()
    return window


def _checked_window(offset: float, limit: float) -> tuple[float, float]:
    if not isinstance(limit, int | float) or not math.isfinite(limit) or limit <= 0:
        raise VideoError(f"limit must be a positive number of seconds, got {limit!r}")
    if not isinstance(offset, int | float) or not math.isfinite(offset):
        raise VideoError(f"offset must be a number of seconds, got {offset!r}")
    return max(0.0, float(offset)), float(limit)


def _checked_file(file: Path, limits: VideoLimits) -> os.stat_result:
    try:
        info = file.stat()
    except FileNotFoundError as exc:
        raise VideoError("it does not exist") from exc
    except PermissionError as exc:
        raise VideoError("permission denied") from exc
    except OSError as exc:
        raise VideoError(f"cannot read it ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(info.st_mode):
        raise VideoError("it is not a regular file")
    if info.st_size == 0:
        raise VideoError("the file is empty (0 bytes)")
    if info.st_size > limits.max_input_bytes:
        raise VideoError(
            f"the file is {info.st_size:,} bytes; videos over {_size(limits.max_input_bytes)} "
            "are not read"
        )
    return info


def _policy(store: AttachmentStore, limits: VideoLimits) -> dict[str, object]:
    av = sys.modules.get("av")
    return {
        "version": VIDEO_POLICY_VERSION,
        "pyav": getattr(av, "__version__", None),
        "interval": SAMPLE_INTERVAL,
        "max_frame_pixels": limits.max_frame_pixels,
        "max_side": limits.max_side,
        "quality": limits.jpeg_quality,
        "encoder": store.policy.fingerprint(),
        "normalized": [
            store.limits.normalized_max_bytes,
            store.limits.normalized_max_pixels,
            store.limits.normalized_max_side,
        ],
    }


class _Window:
    """Frames gathered for one window, with the frame and byte caps applied as they come."""

    def __init__(self, file: Path, grid: Grid, limits: VideoLimits) -> None:
        self.file = file
        self.grid = grid
        self.limits = limits
        self.frames: list[SampledFrame] = []
        # The header, plus room for the hint.
        self.used = len(header_text(str(file), grid.offset, grid.limit).encode()) + _HINT_RESERVE
        self.continue_at: float | None = None
        self.cut_by: CapReason | None = None

    def has_room(self, target: float) -> bool:
        """Whether one more frame may join; cuts the window at ``target`` when not."""
        if len(self.frames) < self.limits.max_frames:
            return True
        self._cut(target, "frames")
        return False

    def add(self, target: float, t: float, att: Attachment) -> bool:
        """Add the frame that serves ``target``; False (and the window cut) when over the cap."""
        cost = _base64_length(att.byte_size) + len(frame_label(t).encode())
        cap = self.limits.max_emitted_bytes
        if self.used + cost > cap:
            if not self.frames:
                raise VideoError(
                    f"its first frame alone (t={clock(t)}, {att.byte_size:,} bytes) is over the "
                    f"{_size(cap)} output limit"
                )
            self._cut(target, "output")
            return False
        self.frames.append(SampledFrame(t, att))
        self.used += cost
        return True

    def _cut(self, target: float, reason: CapReason) -> None:
        self.continue_at, self.cut_by = target, reason

    def result(self, facts: dict[str, Any]) -> VideoWindow:
        return VideoWindow(
            path=self.file,
            offset=self.grid.offset,
            limit=self.grid.limit,
            frames=tuple(self.frames),
            continue_at=self.continue_at,
            duration=facts.get("duration"),
            width=int(facts.get("width") or 0),
            height=int(facts.get("height") or 0),
            cut_by=self.cut_by,
        )


def _replay(
    file: Path, store: AttachmentStore, grid: Grid, limits: VideoLimits, index: FrameIndex
) -> VideoWindow | None:
    """The window from the index alone, or None when any frame it needs is unknown or gone."""
    if index.facts is None:
        return None
    window = _Window(file, grid, limits)
    k = 0
    while k < grid.count:
        target = grid.target(k)
        cached = index.lookup(target)
        if cached is None:
            return None
        if cached is False:
            break
        assert not isinstance(cached, bool)
        if not window.has_room(target):
            break
        try:
            stored = store.get(cached.attachment_id)
        except AttachmentUnavailableError:
            return None
        if not store.contains(stored):
            return None
        if not window.add(target, cached.t, replace(stored, name=_frame_name(file, cached.t))):
            break
        k = grid.next_index(k, cached.t)
    if not window.frames:
        raise VideoError(no_frames_text(grid.offset, grid.limit, index.facts.get("duration")))
    return window.result(index.facts)


def _decode(
    file: Path,
    store: AttachmentStore,
    grid: Grid,
    limits: VideoLimits,
    index: FrameIndex,
    deadline: float,
) -> VideoWindow:
    request = {
        "op": "sample",
        "path": str(file.resolve()),
        "offset": grid.offset,
        "limit": grid.limit,
        "interval": grid.interval,
        "max_frames": limits.max_frames + 1,  # one more than shown: is there anything after?
        "max_side": limits.max_side,
        "max_pixels": limits.max_frame_pixels,
        "quality": limits.jpeg_quality,
    }
    window = _Window(file, grid, limits)
    facts: dict[str, Any] = {}
    end: dict[str, Any] | None = None
    replies = run_job(request, deadline)
    try:
        for message in replies:
            match message.kind:
                case "facts":
                    facts = {k: message.header.get(k) for k in ("width", "height", "duration")}
                case "frame":
                    if not _take_frame(message, file, store, window, index):
                        break
                case "end":
                    end = message.header
                case "error":
                    raise VideoError(str(message.header.get("message") or "the decoder failed"))
                case other:
                    raise VideoError(f"the decoder sent an unexpected {other!r} message")
    except DeadlineExceeded as exc:
        raise VideoError(_deadline_text(limits, window)) from exc
    except WorkerGone as exc:
        raise VideoError(exc.detail) from exc
    except OSError as exc:  # the decoder process could not be started (no memory, no pids)
        raise VideoError(f"the decoder could not be started ({exc.strerror or exc})") from exc
    finally:
        replies.close()
    facts = _with_observed_end(facts, end)
    if (
        end is not None
        and end.get("reason") == "eof"
        and isinstance(end.get("next_target"), int | float)
    ):
        index.record_end(float(end["next_target"]))
    index.record_facts(facts)
    if not window.frames:
        text = no_frames_text(grid.offset, grid.limit, facts.get("duration"))
        damage = end.get("damage") if end else None
        raise VideoError(f"{text} (the stream is damaged: {damage})" if damage else text)
    return window.result(facts)


def _take_frame(
    message: Message, file: Path, store: AttachmentStore, window: _Window, index: FrameIndex
) -> bool:
    """Admit one decoded frame; False when the window is full (the job can stop)."""
    header = message.header
    target, t = float(header["target"]), float(header["t"])
    try:
        att = store.admit_own_jpeg(
            message.payload,
            _frame_name(file, t),
            width=int(header["width"]),
            height=int(header["height"]),
        )
    except AdmissionError as exc:
        raise VideoError(f"the frame at t={clock(t)} was not admitted ({exc})") from exc
    except OSError as exc:
        raise VideoError(
            f"the frame at t={clock(t)} could not be stored ({exc.strerror or exc})"
        ) from exc
    # Recorded even when the window has no room left for it: a re-read of this window then
    # knows from the index alone that a cap (not the end of the stream) cut it, and the
    # window that continues from the hint starts with this very frame.
    index.record(target, t, att.id)
    if not window.has_room(target):
        return False
    return window.add(target, t, att)


def _with_observed_end(facts: dict[str, Any], end: dict[str, Any] | None) -> dict[str, Any]:
    """Trust the header's duration unless the stream ended well before it (or it had none)."""
    if end is None or end.get("reason") != "eof" or not isinstance(end.get("last_t"), int | float):
        return facts
    last = float(end["last_t"])
    claimed = facts.get("duration")
    if (
        isinstance(claimed, int | float)
        and last - SAMPLE_INTERVAL <= claimed <= last + SAMPLE_INTERVAL
    ):
        return facts
    return {**facts, "duration": last}


def _deadline_text(limits: VideoLimits, window: _Window) -> str:
    seconds = plain_seconds(limits.deadline_seconds)
    done = ""
    if window.frames:
        count = len(window.frames)
        done = f" ({count} frame{'' if count == 1 else 's'} decoded, up to t={clock(window.frames[-1].t)})"
    return (
        f"decoding did not finish within the {seconds} s limit{done}; read a shorter window "
        "(a smaller limit), or start later (a larger offset)"
    )


def _frame_name(file: Path, t: float) -> str:
    return f"{file.name} @ {clock(t)}"


def _base64_length(size: int) -> int:
    return 4 * math.ceil(size / 3)


def _size(n: int) -> str:
    if n % GiB == 0:
        return f"{n // GiB} GiB"
    if n % MiB == 0:
        return f"{n // MiB} MiB"
    return f"{n:,} bytes"
