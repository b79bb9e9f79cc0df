"""Long answers in segments, and the finished segments folded into pictures of themselves.

Textual lays out the whole widget tree on every frame that changes a size, and re-renders
every widget in view; a streamed answer changes a size on nearly every frame. Both costs grow
with the number of widgets, and a 12,000-character answer is some 400 of them (paragraphs,
list items, table cells). So a streamed answer is written into several ``Markdown`` widgets of
about ``SEGMENT_CHARS`` each, cut at blank lines, and once a segment is finished and laid out
it is swapped for a :class:`FoldedSegment`: one widget of the same height that keeps the
source and the lines the segment drew (:func:`snapshot`), so it looks exactly the same and
costs next to nothing per frame.

A folded segment is rebuilt (unfolded) when the picture could be wrong or when someone wants
more than a picture: a change of width (which changes every height) or theme, the mouse over
it (text selection, links), or being drawn while nobody follows the stream (scrolling back).
A segment folded without a picture unfolds as soon as it is drawn.
"""

from __future__ import annotations

import re

from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from dcode.tui.textual_internals import draw_offscreen

SEGMENT_CHARS = 1000
FOLD_SCREENS = 2  # segments further above the bottom than this fold even without a picture

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


def snapshot(widget: Widget) -> list[Strip] | None:
    """The lines ``widget`` and everything in it draw at their current size, top to bottom,
    rendered by a compositor of their own (the screen's holds only what is on screen). None
    when the widget has no size yet or Textual cannot render it on its own."""
    size = widget.outer_size
    if not size.width or not size.height:
        return None
    try:
        strips = draw_offscreen(widget, size)
    except Exception:  # noqa: BLE001 - a private Textual API: without a picture, fold without one
        return None
    # Mouse metadata names the widgets that drew the line; the picture has none of them.
    return [strip.discard_meta() for strip in strips]


class FoldedSegment(Widget):
    """A finished segment: its source, its height and the lines it drew; nothing mounted."""

    DEFAULT_CSS = """
    FoldedSegment {
        width: 1fr;
    }
    """

    class Unfold(Message):
        """The real widgets are wanted back: the segment is drawn without a (valid) picture,
        read, pointed at, or its width has changed."""

        def __init__(self, folded: FoldedSegment) -> None:
            super().__init__()
            self.folded = folded

    def __init__(
        self,
        source: str,
        height: int,
        width: int,
        bottom_margin: int = 0,
        picture: list[Strip] | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.folded_width = width
        self.bottom_margin = bottom_margin  # of its last block, for the segment below
        self.picture = picture if picture is not None and len(picture) == height else None
        self.styles.height = height
        self._asked = False

    def on_mount(self) -> None:
        if self.picture is not None:
            self.watch(self.app, "theme", self._theme_changed, init=False)

    def _theme_changed(self) -> None:
        # The picture has the old theme's colours: drop it, and unfold when next drawn (now,
        # if the segment is on screen).
        self.picture = None
        self.refresh()

    def _ask(self) -> None:
        if not self._asked:
            self._asked = True
            self.post_message(self.Unfold(self))

    def _followed(self) -> bool:
        """Whether the transcript holding the segment follows a stream at its bottom."""
        for node in self.ancestors:
            following = getattr(node, "following", None)
            if following is not None:
                return bool(following)
        return False

    def render_line(self, y: int) -> Strip:
        # Only called for lines on screen.
        picture = self.picture
        if picture is not None and self.size.width == self.folded_width and y < len(picture):
            if not self._followed():
                self._ask()  # scrolled back to: someone reads, so build the real thing
            return picture[y]
        self._ask()
        return Strip.blank(self.size.width, self.rich_style)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self.folded_width:
            self._ask()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        # Someone moves the mouse here: selecting text or following a link needs the real
        # widgets. (Not on Enter: text scrolling under a resting pointer enters too.)
        self._ask()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self._ask()
