"""Pick a session to resume: a search box over the list, filtering as you type."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from dcode.agent.sessions import SessionInfo


def format_age(seconds: float) -> str:
    """A short relative age: "just now", "5m ago", "3h ago", "2d ago", "3w ago", "4mo ago"."""
    seconds = max(0.0, seconds)
    for unit, size in (("y", 365 * 86400), ("mo", 30 * 86400), ("w", 7 * 86400), ("d", 86400),
                       ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def _short_path(path: str) -> str:
    home = os.path.expanduser("~")
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


@dataclass(frozen=True, slots=True)
class _Row:
    session: SessionInfo
    haystack: str
    label: Content


class ResumeScreen(ModalScreen[str | None]):
    """Dismisses with the chosen session id, or None on Esc."""

    DEFAULT_CSS = """
    ResumeScreen {
        align: center middle;
    }
    ResumeScreen > #resume-dialog {
        width: 90%;
        max-width: 120;
        height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    #resume-title {
        text-style: bold;
        color: $primary;
        padding: 0 0 1 0;
    }
    #resume-list {
        height: 1fr;
        border: none;
        background: $surface;
    }
    #resume-status {
        color: $text-muted;
        height: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("down", "move(1)", "Down", show=False),
        Binding("up", "move(-1)", "Up", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
    ]

    def __init__(self, sessions: list[SessionInfo], *, now: float | None = None) -> None:
        super().__init__()
        now = time.time() if now is None else now
        ordered = sorted(sessions, key=lambda session: session.updated, reverse=True)
        self._rows = [self._row(session, now) for session in ordered]
        self._shown: list[_Row] = []

    @staticmethod
    def _row(session: SessionInfo, now: float) -> _Row:
        title = session.title.strip() or "(untitled)"
        count = session.message_count
        details = " · ".join(
            part
            for part in (
                _short_path(session.cwd),
                format_age(now - session.updated),
                f"{count} message{'s' if count != 1 else ''}",
                session.model,
                session.id,
            )
            if part
        )
        label = Content.assemble((title, "bold"), "\n", (details, "$text-muted"))
        haystack = f"{session.title}\n{session.cwd}\n{session.id}".lower()
        return _Row(session, haystack, label)

    def compose(self) -> ComposeResult:
        with Vertical(id="resume-dialog"):
            yield Label("Resume a session", id="resume-title")
            yield Input(placeholder="Search title, directory or id…", id="resume-search")
            yield OptionList(id="resume-list")
            yield Label("", id="resume-status")

    def on_mount(self) -> None:
        self._apply_filter("")
        self.query_one("#resume-search", Input).focus()

    @property
    def shown(self) -> list[SessionInfo]:
        """The sessions currently listed, in order (for tests and the app)."""
        return [row.session for row in self._shown]

    def _apply_filter(self, query: str) -> None:
        words = query.lower().split()
        self._shown = [row for row in self._rows if all(word in row.haystack for word in words)]
        options = self.query_one("#resume-list", OptionList)
        options.set_options(Option(row.label, id=row.session.id) for row in self._shown)
        options.highlighted = 0 if self._shown else None
        total = len(self._rows)
        status = self.query_one("#resume-status", Label)
        if not total:
            status.update("No saved sessions yet.")
        elif not self._shown:
            status.update(f"No match among {total} sessions · Esc cancel")
        else:
            status.update(f"{len(self._shown)} of {total} · Enter resume · Esc cancel")

    @on(Input.Changed, "#resume-search")
    def _search(self, event: Input.Changed) -> None:
        self._apply_filter(event.value)

    @on(Input.Submitted, "#resume-search")
    def _pick_highlighted(self) -> None:
        options = self.query_one("#resume-list", OptionList)
        if options.highlighted is not None and self._shown:
            self.dismiss(self._shown[options.highlighted].session.id)

    @on(OptionList.OptionSelected, "#resume-list")
    def _pick(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_move(self, step: int) -> None:
        options = self.query_one("#resume-list", OptionList)
        if not self._shown:
            return
        current = options.highlighted if options.highlighted is not None else 0
        options.highlighted = max(0, min(len(self._shown) - 1, current + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
