"""Long answers in segments, and the segments far out of sight folded away.

Textual lays out the whole widget tree on every frame that changes a size, and a streamed
answer changes a size on nearly every frame. Its cost grows with the number of mounted
widgets, and a 12,000-character answer is some 400 of them (paragraphs, list items, table
cells). So a streamed answer is written into several ``Markdown`` widgets of about
``SEGMENT_CHARS`` each, cut at blank lines, and the finished segments more than ``FOLD_SCREENS``
screens above the bottom are swapped for a :class:`FoldedSegment`: one widget of the same height that
keeps the source. A folded segment that is about to be drawn (scrolled back to) asks to be
unfolded, and a change of width, which changes every height, unfolds it too.
"""

from __future__ import annotations

import re

from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

SEGMENT_CHARS = 1000
FOLD_SCREENS = 2  # segments further than this many screens above the bottom are folded

_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


def segment_cut(segment: str, pending: str, minimum: int = SEGMENT_CHARS) -> int | None:
    """Where in ``pending`` a streamed answer may continue in a fresh Markdown widget.

    Only at a blank line outside a code fence, once the current segment holds ``minimum``
    characters, and before a line that starts a new block (not an indented continuation,
    which could belong to a list item above).
    """
    if len(segment) + len(pending) < minimum:
        return None
    text = segment + pending
    start = max(len(segment), minimum)
    position = text.find("\n\n", max(0, start - 2))
    while position != -1:
        cut = position + 2
        if cut > len(segment) and cut >= minimum:
            if cut >= len(text):
                return None  # the next line is not here yet
            if text[cut] not in " \t\n" and len(_FENCE.findall(text, 0, cut)) % 2 == 0:
                return cut - len(segment)
        position = text.find("\n\n", position + 1)
    return None


class FoldedSegment(Widget):
    """A finished segment out of sight: its source and its height, and nothing mounted."""

    DEFAULT_CSS = """
    FoldedSegment {
        width: 1fr;
    }
    """

    class Unfold(Message):
        """The segment is about to be seen, or its height is no longer right."""

        def __init__(self, folded: FoldedSegment) -> None:
            super().__init__()
            self.folded = folded

    def __init__(self, source: str, height: int, width: int, bottom_margin: int = 0) -> None:
        super().__init__()
        self.source = source
        self.folded_width = width
        self.bottom_margin = bottom_margin  # of its last block, for the segment below
        self.styles.height = height
        self._asked = False

    def _ask(self) -> None:
        if not self._asked:
            self._asked = True
            self.post_message(self.Unfold(self))

    def render_line(self, y: int) -> Strip:
        # Only called for lines on screen: the segment is being scrolled into view.
        self._ask()
        return Strip.blank(self.size.width, self.rich_style)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self.folded_width:
            self._ask()
