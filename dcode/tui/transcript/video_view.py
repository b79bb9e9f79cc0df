"""A sampled video window in the transcript: its one line, and its contact sheet.

The line (``clip.mp4 · 12 frames · 0:00.0–0:22.0 · 1.3 MiB sent``) is the same for a video the
user sent and for a video the model read. What the frames weigh on the model's route is worked
out off the UI thread (the app's ``frames_sent_bytes``), so the line first shows without it.

The sheet is a strip of thumbnails where the terminal can show pictures (Kitty's graphics
protocol or Sixel, through textual-image, loaded on first use), and otherwise a timeline of the
frames' times. Which one is decided once, before the app starts (``dcode.tui.graphics``); tests
and tmux get the timeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from dcode.media.frames import compact_line, timeline, timestamps
from dcode.terminal_text import safe_text
from dcode.tui.transcript.entries import VideoSeen

if TYPE_CHECKING:
    from PIL import Image

    from dcode.media.store import AttachmentStore
    from dcode.tui.graphics import Graphics

MOST_THUMBNAILS = 12
TIMELINE_WIDTH = 40
THUMBNAIL_ROWS = 5
MOST_LISTED = 16  # frame times listed under the timeline; more are summed up by the axis


def video_line(seen: VideoSeen) -> str:
    return safe_text(compact_line(seen.strip, seen.sent_bytes))  # it names the file


def measure(widget: Widget, seen: VideoSeen, done: Callable[[], object]) -> None:
    """Start measuring ``seen``'s bytes for the model's route in a thread, then call ``done``."""
    if seen.sent_bytes is not None:
        return
    frames_sent_bytes = getattr(widget.app, "frames_sent_bytes", None)
    if frames_sent_bytes is None:
        return

    async def run() -> None:
        try:
            sent = await asyncio.to_thread(frames_sent_bytes, seen.strip)
        except Exception:  # noqa: BLE001 - the line simply stays without its bytes
            return
        if sent is not None:
            seen.sent_bytes = sent
            done()

    widget.run_worker(run(), group="video-bytes", exit_on_error=False)


class FrameSheet(Vertical):
    """The contact sheet of one window, under its line."""

    DEFAULT_CSS = """
    FrameSheet { height: auto; padding: 0 0 0 2; }
    FrameSheet > .video-line { color: $text; }
    FrameSheet > .video-timeline { color: $text-muted; }
    FrameSheet > .video-thumbnails { height: 5; width: auto; }
    """

    def __init__(self, seen: VideoSeen) -> None:
        super().__init__()
        self.seen = seen

    def compose(self) -> ComposeResult:
        yield Static(classes="video-line")
        yield Static(classes="video-timeline")

    def on_mount(self) -> None:
        self.sync()
        measure(self, self.seen, self.sync)
        graphics = getattr(self.app, "graphics", None)
        if graphics is not None and graphics.shows_pictures:
            self.run_worker(
                self._thumbnails(graphics), group="video-thumbnails", exit_on_error=False
            )

    def sync(self) -> None:
        self.query_one(".video-line", Static).update(
            Content.assemble(("▸ ", "$text-accent"), video_line(self.seen))
        )
        strip = self.seen.strip
        lines = timeline(strip, TIMELINE_WIDTH)
        if len(strip.frames) <= MOST_LISTED:
            lines += "\n" + timestamps(strip)
        self.query_one(".video-timeline", Static).update(Content(lines))

    async def _thumbnails(self, graphics: Graphics) -> None:
        """Build the strip in a thread, then show it in place of the timeline."""
        store = getattr(getattr(self.app, "media", None), "store", None)
        if store is None:
            return
        try:
            widget_class, picture = await asyncio.to_thread(
                _strip_picture, graphics, self.seen, store
            )
        except Exception:  # noqa: BLE001 - no pictures: the timeline stays
            return
        if picture is None or not self.is_attached:
            return
        image = widget_class(picture, classes="video-thumbnails")
        image.styles.height = THUMBNAIL_ROWS
        # In the same step as the mount, so that no frame shows the timeline and the pictures.
        self.query_one(".video-timeline", Static).display = False
        await self.mount(image)


def _strip_picture(
    graphics: Graphics, seen: VideoSeen, store: AttachmentStore
) -> tuple[Callable[..., Widget], Image.Image | None]:
    """Worker thread: the image widget class for the terminal, and the strip as one picture."""
    from dcode.media.contact_sheet import STRIP, contact_sheet, strip_frames
    from dcode.tui.graphics import image_widget

    widget_class = image_widget(graphics)
    frames = strip_frames(seen.strip, store, most=MOST_THUMBNAILS)
    if not any(image is not None for _, image in frames):
        return widget_class, None
    return widget_class, contact_sheet(frames, STRIP)
