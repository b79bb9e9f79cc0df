"""A ``start_async_task`` call: one widget for the async task it started, drawn as a
subagent's head is (``task_view.TaskView``).

Its line names the remote agent and the job, the task's short id, its remote status and the
time since it started; its mark turns while the remote run goes on. The status changes as the
tools and the session's poller tell it (``AsyncTaskStatus``, through the transcript's model):
a check, an update or a cancel of the task changes this widget, never draws another. A server
that could not be asked is one line under it. A click (or Ctrl+O) shows the whole task id and
description.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from dcode.terminal_text import safe_text
from dcode.tui.transcript.entries import RemoteTask, ToolCallEntry
from dcode.tui.transcript.icons import Spinner
from dcode.tui.transcript.task_view import DESCRIPTION_CHARS, elapsed_label, one_line
from dcode.tui.transcript.tools import Foldable

SHORT_ID_CHARS = 8
TICK_SECONDS = 1.0
"""How often a running task's line is drawn again (its time, its mark)."""
STATUS_MARKS: dict[str, tuple[str, str]] = {
    "success": ("✓", "$text-success"),
    "error": ("✗", "$text-error"),
    "timeout": ("✗", "$text-error"),
    "interrupted": ("◌", "$text-muted"),
    "cancelled": ("◌", "$text-muted"),
}


def short_id(task_id: str) -> str:
    return task_id if len(task_id) <= SHORT_ID_CHARS else task_id[:SHORT_ID_CHARS] + "…"


def remote_elapsed(remote: RemoteTask, now: float) -> str:
    """The time since it started, or that it took (as far as it was seen); "" unknown."""
    if remote.started is None:
        return ""
    end = now if remote.live or remote.ended is None else remote.ended
    return elapsed_label(max(0.0, end - remote.started))


class RemoteTaskView(Foldable, Vertical):
    DEFAULT_CSS = """
    RemoteTaskView {
        height: auto;
        padding: 0 0 0 1;
    }
    RemoteTaskView > .remote-head { text-wrap: nowrap; text-overflow: ellipsis; }
    RemoteTaskView > .remote-head:hover { background: $boost; }
    RemoteTaskView > .remote-error {
        padding: 0 0 0 2;
        color: $text-error;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    RemoteTaskView > .remote-detail { padding: 0 0 0 2; color: $text-muted; }
    """

    def __init__(
        self, entry: ToolCallEntry, *, expanded: bool = False, animate: bool = True
    ) -> None:
        super().__init__()
        self.entry = entry
        self.expanded = expanded
        # Redrawn while it runs for its running time too; turning only when animated.
        self._spinner = Spinner(
            self,
            lambda: self.query_one(".remote-head", Static).update(self.head(), layout=False),
            interval=TICK_SECONDS,
            turn=animate,
        )
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Static(self.head(), classes="remote-head")
        yield Static(classes="remote-error")
        yield Static(classes="remote-detail")

    def on_mount(self) -> None:
        self.entry.view = self
        self._ready = True
        self.sync()

    def on_unmount(self) -> None:
        self._ready = False
        if self.entry.view is self:
            self.entry.view = None
        self._spinner.stop()

    @property
    def remote(self) -> RemoteTask:
        assert self.entry.remote is not None  # the widget of a call that started a task
        return self.entry.remote

    @property
    def status(self) -> str:
        """The status as shown: the remote run's, or ``error`` while its server cannot be asked."""
        return "error" if self.remote.error else self.remote.status

    @property
    def _live(self) -> bool:
        return self.remote.live and not self.remote.error

    def _mark(self) -> tuple[str, str]:
        if self._live:
            return self._spinner.mark, "$text-accent"
        return STATUS_MARKS.get(self.status, ("✗", "$text-error"))

    def head(self) -> Content:
        """``⠋ echo  a slow job  task 01a25144…  running · 12s``."""
        remote = self.remote
        mark, style = self._mark()
        parts: list[tuple[str, str] | str] = [
            (mark, style),
            " ",
            (safe_text(remote.agent_name), "bold"),
        ]
        if remote.description:
            parts += ["  ", one_line(remote.description, DESCRIPTION_CHARS)]
        parts += [
            "  ",
            (f"task {safe_text(short_id(remote.task_id))}", "$text-muted"),
            "  ",
            (self.status, "$text-accent" if self._live else style),
        ]
        if elapsed := remote_elapsed(remote, time.time()):
            parts.append((f" · {elapsed}", "$text-muted"))
        return Content.assemble(*parts)

    def _detail(self) -> str:
        remote = self.remote
        return safe_text(f"task {remote.task_id} on {remote.agent_name}\n{remote.description}")

    def sync(self) -> None:
        """Read the entry again: the line, the server's error, the details when opened."""
        if not self._ready:
            return
        self.query_one(".remote-head", Static).update(self.head(), layout=False)
        error = self.query_one(".remote-error", Static)
        line = self.remote.error
        error.update(Content(one_line(line)))
        error.display = bool(line)
        detail = self.query_one(".remote-detail", Static)
        detail.update(Content(self._detail() if self.expanded else ""))
        detail.display = self.expanded
        self._spinner.keep(self._live)
