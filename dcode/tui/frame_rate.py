"""Textual's frame cap, raised from its default of 60 frames a second to 120.

Repaints wait for the next frame slot. At 60 a second the end of a streamed answer can wait up
to 17 ms for its slot after everything else is ready; at 120, half that. Frames are not drawn
more often for it: they still only follow changes, and a streamed answer is written at a pace
of its own. Textual reads ``TEXTUAL_FPS`` once, when ``textual.constants`` is first imported;
a value the user set is left alone, and the setting is not passed on to the commands dcode runs.
"""

from __future__ import annotations

import os
import sys

FRAMES_PER_SECOND = 120


def raise_frame_cap() -> None:
    if "TEXTUAL_FPS" in os.environ or "textual.constants" in sys.modules:
        return
    os.environ["TEXTUAL_FPS"] = str(FRAMES_PER_SECOND)
    try:
        import textual.constants  # noqa: F401 - reads the setting now
    finally:
        del os.environ["TEXTUAL_FPS"]
