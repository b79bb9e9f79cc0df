"""A video the user hands over (``[video N]`` in the prompt box, ``dcode -p … -i clip.mp4``):
sampled over its first window by the same code as read_file, and sent as that window's blocks.

The window's frames are image attachments like any pasted screenshot, so the prompt holds
reference blocks only. ``sent_bytes`` is what those frames weigh in a request on the model's
route (their request variants, derived here and cached for the request that follows).

Blocking (PyAV decode, Pillow variants): the TUI calls :func:`sample_first_window` in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dcode.media.errors import MediaError
from dcode.media.frames import FrameStrip, bytes_for_route, frames_in

if TYPE_CHECKING:
    from dcode.media.limits import ImageRoute
    from dcode.media.store import AttachmentStore

FIRST_WINDOW_S = 100.0


class VideoInputError(MediaError):
    """A video that cannot be sent; the message is one line naming the file and the reason."""


@dataclass(frozen=True, slots=True)
class SampledVideo:
    path: Path
    blocks: list[dict[str, object]]
    """The window's content blocks: header, a label and a reference per frame, the hint."""
    strip: FrameStrip
    sent_bytes: int | None = None


def shown_path(path: Path, workspace: Path | None) -> str:
    """The path as the header names it: relative to the workspace when inside it."""
    if workspace is not None:
        try:
            return str(path.resolve().relative_to(workspace.resolve()))
        except ValueError:
            pass
    return str(path)


def sample_first_window(
    path: Path,
    store: AttachmentStore,
    *,
    workspace: Path | None = None,
    route: ImageRoute | None = None,
    takes_images: bool = True,
) -> SampledVideo:
    """Sample ``path`` over ``[0, 100 s)``; raises :class:`VideoInputError` with one line.

    ``route`` (the model's) measures ``sent_bytes``; a model that takes no images gets
    placeholders instead of the frames, so nothing is sent (0).
    """
    try:
        from dcode.media.video import sample_window, video_support, window_blocks
    except ImportError as exc:  # the module itself is missing: an install without video support
        raise VideoInputError(
            f"{path.name} can't be sent: video support is not installed ({exc})"
        ) from None
    why = video_support()
    if why is not None:
        raise VideoInputError(f"{path.name} can't be sent: {why}")
    try:
        window = sample_window(path, store=store, offset=0.0, limit=FIRST_WINDOW_S)
    except (MediaError, OSError) as exc:
        raise VideoInputError(f"{path.name} can't be sent: {exc}") from None
    blocks = window_blocks(window, shown_path(path, workspace))
    strip = frames_in(blocks)
    if strip is None:
        raise VideoInputError(
            f"{path.name} can't be sent: no frame could be sampled in its first {FIRST_WINDOW_S:g} s"
        )
    sent: int | None = None
    if not takes_images:
        sent = 0
    elif route is not None:
        sent = bytes_for_route(strip.frames, route, store)
    return SampledVideo(path, blocks, strip, sent)
