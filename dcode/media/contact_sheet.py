"""A contact sheet: a video window's frames as one picture, each thumbnail over its timestamp.

``dcode media inspect --sheet`` writes it as a PNG, and the tool widget of a video read shows
a one-row sheet (a strip) where the terminal can show pictures. Every thumbnail has the same
size, from the first frame's aspect ratio (a window's frames share it), so the sheet's size
follows from the frame count alone: ``sheet_size`` says what it will be.

Pillow work, blocking: call it in a thread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from dcode.media.frames import FrameStrip, clock
from dcode.media.store import AttachmentStore

BACKGROUND = (24, 24, 24)
CAPTION = (220, 220, 220)
MISSING = (70, 30, 30)


@dataclass(frozen=True, slots=True)
class SheetLayout:
    columns: int = 4
    thumb_width: int = 320
    padding: int = 6
    caption: int = 22  # the caption band under each thumbnail, in pixels

    def thumb_height(self, aspect: float) -> int:
        return max(1, round(self.thumb_width * aspect))


STRIP = SheetLayout(columns=64, thumb_width=160, padding=2, caption=0)


def sheet_size(count: int, aspect: float, layout: SheetLayout = SheetLayout()) -> tuple[int, int]:
    """The pixel size of a sheet of ``count`` frames whose height/width ratio is ``aspect``."""
    columns = max(1, min(layout.columns, count))
    rows = max(1, math.ceil(count / columns))
    cell_height = layout.thumb_height(aspect) + layout.caption
    return (
        columns * layout.thumb_width + (columns + 1) * layout.padding,
        rows * cell_height + (rows + 1) * layout.padding,
    )


def contact_sheet(
    frames: Sequence[tuple[float, Image.Image | None]], layout: SheetLayout = SheetLayout()
) -> Image.Image:
    """The sheet of ``(t, image)`` pairs, left to right then top to bottom; a None image (a
    frame missing from the store) leaves a dark cell with its timestamp."""
    if not frames:
        raise ValueError("a contact sheet needs at least one frame")
    first = next((image for _, image in frames if image is not None), None)
    aspect = first.height / first.width if first is not None else 9 / 16
    size = sheet_size(len(frames), aspect, layout)
    sheet = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=max(10, layout.caption - 8)) if layout.caption else None
    width, height = layout.thumb_width, layout.thumb_height(aspect)
    columns = max(1, min(layout.columns, len(frames)))
    for index, (t, image) in enumerate(frames):
        row, column = divmod(index, columns)
        x = layout.padding + column * (width + layout.padding)
        y = layout.padding + row * (height + layout.caption + layout.padding)
        if image is None:
            draw.rectangle((x, y, x + width - 1, y + height - 1), fill=MISSING)
        else:
            thumb = image.convert("RGB")
            thumb.thumbnail((width, height), Image.Resampling.LANCZOS)
            sheet.paste(thumb, (x + (width - thumb.width) // 2, y + (height - thumb.height) // 2))
        if font is not None:
            draw.text((x + 2, y + height + 3), clock(t), font=font, fill=CAPTION)
    return sheet


def strip_frames(
    strip: FrameStrip, store: AttachmentStore, most: int | None = None
) -> list[tuple[float, Image.Image | None]]:
    """The strip's frames read back from the store (at most ``most``, evenly spread)."""
    import io

    from dcode.media.errors import MediaError

    chosen = list(strip.frames)
    if most is not None and len(chosen) > most > 0:
        step = (len(chosen) - 1) / max(1, most - 1)
        chosen = [chosen[round(i * step)] for i in range(most)]
    out: list[tuple[float, Image.Image | None]] = []
    for frame in chosen:
        try:
            data = store.read_bytes(store.get(frame.attachment_id))
            image: Image.Image | None = Image.open(io.BytesIO(data))
            assert image is not None
            image.load()
        except (MediaError, OSError):
            image = None
        out.append((frame.t, image))
    return out


def write_sheet(
    strip: FrameStrip, store: AttachmentStore, path: Path, layout: SheetLayout = SheetLayout()
) -> tuple[int, int]:
    """Write the strip's contact sheet to ``path`` as a PNG; returns its size."""
    sheet = contact_sheet(strip_frames(strip, store), layout)
    sheet.save(path, "PNG")
    return sheet.size
