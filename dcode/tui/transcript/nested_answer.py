"""A subagent's answer inside its task widget: plain text, drawn cheaply.

Four subagents may stream at once, beside the session's own answer. A Markdown document for
each would parse and lay out four streams on every beat, so a subagent's answer is one
``Static``: while it streams (and while its task is not opened), the tail of its text, a few
rows, rewritten at most every ``NESTED_INTERVAL``; opened and finished, its whole text as
Markdown, drawn once.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from dcode.tui.transcript.entries import AssistantEntry

NESTED_INTERVAL = 0.15
TAIL_ROWS = 3


class NestedAnswer(Static):
    DEFAULT_CSS = """
    NestedAnswer { padding: 0 1 0 2; color: $text; }
    NestedAnswer.-thinking { color: $text-muted; text-style: italic; }
    """

    def __init__(self, entry: AssistantEntry, *, full: bool = False) -> None:
        super().__init__()
        self.entry = entry
        self.full = full
        self._scheduled = False
        self._rows = -1  # the rows drawn last (-1: the whole Markdown, or nothing yet)

    def on_mount(self) -> None:
        self.entry.view = self
        self.sync()

    def on_unmount(self) -> None:
        if self.entry.view is self:
            self.entry.view = None

    def _tail(self, text: str) -> Content:
        """The last ``TAIL_ROWS`` rows of ``text`` as wrapped at this width."""
        width = self.content_size.width
        if width <= 0:  # not laid out yet: about a screen's width
            width = 80
        tail = text.rstrip()[
            -(TAIL_ROWS * width * 2) :
        ]  # enough for the rows; wrapping it all is not needed
        rows = Content(tail).wrap(width)[-TAIL_ROWS:]
        return Content("\n").join(rows)

    def sync(self) -> None:
        entry = self.entry
        thinking = not entry.text.strip() and bool(entry.reasoning.strip())
        self.set_class(thinking, "-thinking")
        if self.full and not entry.streaming:
            from rich.markdown import Markdown

            self._rows = -1
            # A link shows its address beside its text, rather than as a terminal hyperlink
            # whose text could name another one.
            self.update(Markdown(entry.text, hyperlinks=False))
            return
        content = self._tail(entry.reasoning if thinking else entry.text)
        rows = len(content.plain.splitlines())
        # Once the tail fills its rows, a new tail takes the same room: no layout is needed.
        self.update(content, layout=rows != self._rows)
        self._rows = rows

    def text_arrived(self) -> None:
        """More text: drawn at the next beat, not on every delta."""
        if not self._scheduled:
            self._scheduled = True
            self.set_timer(NESTED_INTERVAL, self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        self.sync()

    def set_full(self, full: bool) -> None:
        if full != self.full:
            self.full = full
            self.sync()
