"""A saved file shown read-only: the full output of a call that was too large for the model.

The text is read off the UI thread, up to ``MAX_VIEW_CHARS`` (a note says how much more the
file holds), into a read-only ``TextArea``, which draws only the lines on screen, so a
two-megabyte log scrolls as a short one does. Esc or q closes it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, TextArea

from dcode.terminal_text import safe_text

MAX_VIEW_CHARS = 4_000_000


def read_for_view(path: Path) -> tuple[str, str]:
    """The file's text to show (safe to draw: a tool's saved output may hold anything), and a
    note on it (what was left out, or why it cannot be read)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_VIEW_CHARS + 1)
    except OSError as exc:
        return "", f"cannot read {path}: {exc.strerror or exc}"
    if len(text) > MAX_VIEW_CHARS:
        return safe_text(text[:MAX_VIEW_CHARS]), f"showing the first {MAX_VIEW_CHARS:,} characters"
    return safe_text(text), f"{len(text):,} characters, {len(text.splitlines()):,} lines"


class FileViewScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    FileViewScreen {
        align: center middle;
    }
    FileViewScreen > #file-view-dialog {
        width: 95%;
        height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    FileViewScreen #file-view-title { text-style: bold; color: $primary; }
    FileViewScreen #file-view-hint { color: $text-muted; }
    FileViewScreen TextArea { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
    ]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="file-view-dialog"):
            yield Label(Content(safe_text(str(self.path))), id="file-view-title")
            yield TextArea(
                "", read_only=True, soft_wrap=False, show_line_numbers=True, id="file-view-text"
            )
            yield Label("reading…", id="file-view-hint")

    def on_mount(self) -> None:
        self._load()

    @work(group="file-view", exclusive=True)
    async def _load(self) -> None:
        text, note = await asyncio.to_thread(read_for_view, self.path)
        self.query_one(TextArea).load_text(text)
        self.query_one("#file-view-hint", Label).update(
            Content(safe_text(f"{note} · Esc or q to close"))
        )
        self.query_one(TextArea).focus()

    def action_close(self) -> None:
        self.dismiss(None)
