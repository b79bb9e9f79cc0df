"""Pick a session to resume: a search box over the list, filtering as you type."""

from __future__ import annotations

import os
import time

from textual.content import Content

from dcode.agent.store.base import SessionInfo
from dcode.terminal_text import safe_text
from dcode.tui.screens.picker import FilterPicker, PickerRow


def format_age(seconds: float) -> str:
    """A short relative age: "just now", "5m ago", "3h ago", "2d ago", "3w ago", "4mo ago"."""
    seconds = max(0.0, seconds)
    for unit, size in (
        ("y", 365 * 86400),
        ("mo", 30 * 86400),
        ("w", 7 * 86400),
        ("d", 86400),
        ("h", 3600),
        ("m", 60),
    ):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def _short_path(path: str) -> str:
    home = os.path.expanduser("~")
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


class ResumeScreen(FilterPicker[SessionInfo]):
    """Dismisses with the chosen session id, or None on Esc."""

    NAME = "resume"
    HEADING = "Resume a session"
    PLACEHOLDER = "Search title, directory or id…"

    DEFAULT_CSS = """
    ResumeScreen > .picker-dialog {
        max-width: 120;
    }
    """

    def __init__(self, sessions: list[SessionInfo], *, now: float | None = None) -> None:
        now = time.time() if now is None else now
        ordered = sorted(sessions, key=lambda session: session.updated, reverse=True)
        super().__init__([self._row(session, now) for session in ordered])

    @staticmethod
    def _row(session: SessionInfo, now: float) -> PickerRow[SessionInfo]:
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
        # The title is a prompt's words and the model a server's name: drawn safe.
        label = Content.assemble(
            (safe_text(title), "bold"), "\n", (safe_text(details), "$text-muted")
        )
        haystack = f"{session.title}\n{session.cwd}\n{session.id}".lower()
        return PickerRow(session, session.id, haystack, label)

    def status_line(self) -> str:
        total = len(self.rows)
        if not total:
            return "No saved sessions yet."
        if not self.shown:
            return f"No match among {total} sessions · Esc cancel"
        return f"{len(self.shown)} of {total} · Enter resume · Esc cancel"
