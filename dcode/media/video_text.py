"""The words around sampled video frames: the header, each frame's label and the truncation hint.

The model pages through a video the way it pages through a long file, so these lines are its
only map: the header says which window it is looking at, each label says when a frame was
taken, and the hint says exactly which ``offset`` to ask for next. They depend only on the
window and the frames (never on time or turn), so a re-read gives the same request bytes.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

FPS_TEXT = "0.5 fps"

CapReason: TypeAlias = Literal["frames", "output"]


def clock(seconds: float) -> str:
    """``HH:MM:SS.mmm``, rounded to the millisecond (hours keep counting past 99)."""
    millis = max(0, round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}"


def plain_seconds(seconds: float) -> str:
    """``100`` or ``12.5``: how a limit the model typed reads back (no trailing zeros)."""
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def summary_line(shown: str, frames: int) -> str:
    """The summary a read_file result starts with (it stays in the ToolMessage)."""
    return f"Read video {shown}: sampled {frames} frame{'' if frames == 1 else 's'}."


def header_text(shown: str, offset: float, limit: float) -> str:
    """The window's first block: ``Reading first 100s of PATH at 0.5 fps.`` from the start,
    else the half-open window, ``Reading [12.000s, 102.000s) of PATH at 0.5 fps.``."""
    if offset == 0:
        return f"Reading first {plain_seconds(limit)}s of {shown} at {FPS_TEXT}."
    return f"Reading [{offset:.3f}s, {offset + limit:.3f}s) of {shown} at {FPS_TEXT}."


def frame_label(t: float) -> str:
    return f"Frame at t={clock(t)}"


def hint_text(continue_at: float) -> str:
    """The last block of a cut window: where coverage stopped and the offset to go on from.

    ``continue_at`` is the first instant of the grid left unserved, so continuing from it
    neither repeats the last frame shown nor skips one."""
    return (
        f"Coverage truncated at t={clock(continue_at)}: the output or frame cap was reached "
        f"before the full window was decoded. Continue from offset={continue_at:.3f} to see "
        "the remaining frames."
    )


def no_frames_text(offset: float, limit: float, duration: float | None) -> str:
    """Why an empty window is an error, with the length that tells the model where the end is."""
    text = f"No frames decoded for window [{offset:.3f}s, {offset + limit:.3f}s)"
    if duration is not None:
        text += f"; the video lasts {duration:.3f}s"
    return text
