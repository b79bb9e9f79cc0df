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

    def on_mount(self) -> None:
        self.entry.view = self
        self.sync()

    def on_unmount(self) -> None:
        if self.entry.view is self:
            self.entry.view = None

    def _tail(self, text: str) -> str:
        """The last rows of ``text`` at this width, about: a streamed paragraph is one line."""
        width = max(20, self.content_size.width or 80)
        rows = text.rstrip().splitlines()[-TAIL_ROWS:]
        tail = "\n".join(rows)
        room = TAIL_ROWS * width
        return tail if len(tail) <= room else "…" + tail[-(room - 1) :].lstrip()

    def sync(self) -> None:
        entry = self.entry
        thinking = not entry.text.strip() and bool(entry.reasoning.strip())
        self.set_class(thinking, "-thinking")
        if self.full and not entry.streaming:
            from rich.markdown import Markdown

            self.update(Markdown(entry.text))
            return
        self.update(Content(self._tail(entry.reasoning if thinking else entry.text)))

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
