"""A ``task`` call: one widget for the subagent it runs.

The head names the agent and its job, with the time it has taken and its tokens. Under it, while
the subagent works, its own answers and tool calls stream into a nested view of their own (its
last few entries, and a line counting the earlier ones). Once it has finished, the task folds to
its head, which then ends with a preview of the result. A click on the head, or Ctrl+O for the
whole transcript, opens everything it did; a subagent's own subagents nest the same way.

Like every transcript widget it is built from its entry (the call, and its ``TaskRun``), and
mounts widgets only for the nested entries it shows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from dcode.agent.events import ToolStatus
from dcode.terminal_text import safe_text
from dcode.tui.status import human_tokens
from dcode.tui.transcript.entries import Entry, TaskRun, ToolCallEntry
from dcode.tui.transcript.icons import STATUS_ICONS, Spinner
from dcode.tui.transcript.plain_lines import PlainLines
from dcode.tui.transcript.tools import CallsWithin, ToolGroupView

EntryWidget = Callable[..., Widget]
"""``build.entry_widget``: the widget for a nested entry."""
LIVE_ENTRIES = 3
"""Nested entries a running task shows (the newest); the others are counted on one line."""
DESCRIPTION_CHARS = 60
FOLDED_DESCRIPTION_CHARS = 40
"""Folded, the description leaves room for the result's preview."""
WINDOW_ROWS = 9
"""The rows a running task's nested view takes, whatever streams in it (its newest rows show):
its size never changes while it streams, so what changes in it lays out only the window."""


def elapsed_label(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m {whole % 60:02d}s"


def one_line(text: str, limit: int | None = None) -> str:
    line = " ".join(safe_text(text).split())
    if limit is not None and len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


class TaskHead(Static):
    """The task's one line; a click opens or folds the task."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if isinstance(self.parent, TaskView):
            self.parent.toggle()


class TaskBody(Vertical):
    """The nested entries. In a running task's fixed window, its newest rows are the ones seen."""

    def on_resize(self) -> None:
        window = self.parent
        if isinstance(window, Widget) and window.has_class("task-window"):
            window.scroll_end(animate=False, force=True)


class TaskView(CallsWithin, Vertical, PlainLines):
    DEFAULT_CSS = """
    TaskView {
        height: auto;
        padding: 0 0 0 1;
    }
    TaskView > .task-head { text-wrap: nowrap; text-overflow: ellipsis; }
    TaskView > .task-head:hover { background: $boost; }
    TaskView > .task-earlier { color: $text-muted; padding: 0 0 0 3; }
    TaskView > .task-window {
        height: auto;
        margin: 0 0 0 1;
        padding: 0 0 0 1;
        border-left: solid $primary 50%;
    }
    TaskView.-windowed > .task-window { height: WINDOW_ROWS; overflow: hidden hidden; }
    TaskView > .task-window > .task-body { height: auto; }
    TaskView > .task-window > .task-body > ToolGroupView { margin: 0; }
    TaskView > .task-window > .task-body > NoticeMessage { margin: 0; }
    TaskView.-folded > .task-window { display: none; }
    TaskView.-folded > .task-earlier { display: none; }
    TaskView > .task-note { padding: 0 0 0 2; color: $text-warning; }
    """.replace("WINDOW_ROWS", str(WINDOW_ROWS))
    FOLDS_ON_CLICK = False  # its head's click does (TaskHead), not one in what the subagent did

    def __init__(
        self,
        entry: ToolCallEntry,
        entry_widget: EntryWidget,
        *,
        expanded: bool = False,
        animate: bool = True,
    ) -> None:
        """``entry_widget`` builds the widgets of the subagent's entries (``build.entry_widget``)."""
        super().__init__()
        self.entry = entry
        self._entry_widget = entry_widget
        self.expanded = expanded
        self._animated = animate
        # The head is one row, always: its redraw need not lay the transcript out again.
        self._spinner = Spinner(
            self,
            lambda: self.query_one(".task-head", Static).update(self._head(), layout=False),
        )
        self._shown: list[Entry] = []
        self._showing = asyncio.Lock()
        self._ready = False  # composed and mounted: its parts can be updated
        self._hidden = 0  # what the "earlier" line and the note say now (updated only on a change)
        self._note = entry.note

    # -- what is shown -------------------------------------------------------------------

    @property
    def run(self) -> TaskRun | None:
        return self.entry.task

    @property
    def folded(self) -> bool:
        """Down to its head: a finished task, unless opened."""
        return not self.expanded and not self._live

    @property
    def _live(self) -> bool:
        run = self.run
        if run is not None:
            return run.running
        return self.entry.running

    def _wanted(self) -> list[Entry]:
        run = self.run
        if run is None or self.folded:
            return []
        if self.expanded:
            return list(run.entries)
        return run.entries[-LIVE_ENTRIES:]

    def compose(self) -> ComposeResult:
        yield TaskHead(self._head(), classes="task-head")
        yield Static(classes="task-earlier")
        with Vertical(classes="task-window"):
            yield TaskBody(classes="task-body")
        yield Static(Content(safe_text(self.entry.note)), classes="task-note")

    async def on_mount(self) -> None:
        self.entry.view = self
        self._ready = True
        self.sync()
        await self.show_entries()

    def on_unmount(self) -> None:
        self._ready = False
        if self.entry.view is self:
            self.entry.view = None
        for entry in self._shown:
            entry.view = None
        self._shown = []
        self._spinner.stop()

    async def show_entries(self) -> None:
        """Mount widgets for the nested entries to show (and only those), in order."""
        entry_widget = self._entry_widget
        async with self._showing:
            if not self._ready:
                return
            wanted = self._wanted()
            body = self.query_one(".task-body", Vertical)
            kept = [entry for entry in self._shown if any(entry is other for other in wanted)]
            gone = [entry for entry in self._shown if not any(entry is other for other in kept)]
            for entry in gone:
                entry.view = None
            doomed = [
                child for child in body.children if not any(child is entry.view for entry in kept)
            ]
            if doomed:
                await body.remove_children(doomed)
            if kept:
                first = next(index for index, entry in enumerate(wanted) if entry is kept[0])
                before, after = wanted[:first], wanted[first + len(kept) :]
            else:
                before, after = [], wanted
            build = [
                entry_widget(entry, expanded=self.expanded, animate=self._animated, nested=True)
                for entry in before
            ]
            if build and kept[0].view is not None:
                await body.mount_all(build, before=kept[0].view)
            build = [
                entry_widget(entry, expanded=self.expanded, animate=self._animated, nested=True)
                for entry in after
            ]
            if build:
                await body.mount_all(build)
            self._shown = wanted
            self._sync_earlier()

    async def entry_added(self, entry: Entry) -> None:
        """The subagent has a new answer, tool step or notice."""
        await self.show_entries()

    # -- head ----------------------------------------------------------------------------

    def _icon(self) -> tuple[str, str]:
        run = self.run
        status = run.status if run is not None else self.entry.status
        if status is None or (run is None and self.entry.running):
            return self._spinner.mark, "$text-accent"
        return STATUS_ICONS[status]

    def _figures(self) -> str:
        run = self.run
        if run is None:
            return ""
        figures = []
        if run.running and run.started is not None:
            figures.append(elapsed_label(time.monotonic() - run.started))
        elif run.duration_ms:
            figures.append(elapsed_label(run.duration_ms / 1000))
        tokens = run.input_tokens + run.output_tokens
        if tokens:
            figures.append(f"{human_tokens(tokens)} tokens")
        return " · ".join(figures)

    def _outcome(self) -> str:
        """The result's first line, for the folded head."""
        run = self.run
        if run is not None and run.status is not None:
            if run.status is ToolStatus.OK:
                return one_line(run.result or self.entry.preview)
            return one_line(run.error or self.entry.preview or str(run.status))
        if self.entry.status is not None:  # a call that never started its subagent
            return one_line(self.entry.preview)
        return ""

    def _head(self) -> Content:
        run = self.run
        args = self.entry.args or {}
        agent = safe_text(
            run.agent_type if run is not None else str(args.get("subagent_type") or "")
        )
        description = run.description if run is not None else str(args.get("description") or "")
        icon, style = self._icon()
        parts: list[tuple[str, str] | str] = [(icon, style), " ", (agent or "task", "bold")]
        if description:
            parts += [
                "  ",
                one_line(
                    description, FOLDED_DESCRIPTION_CHARS if self.folded else DESCRIPTION_CHARS
                ),
            ]
        elif self.entry.args_chars and self.entry.running:
            parts += ["  ", (f"… {self.entry.args_chars} chars of arguments", "$text-muted")]
        if figures := self._figures():
            parts += ["  ", (figures, "$text-muted")]
        if self.folded and (outcome := self._outcome()):
            failed = run is not None and run.status not in (None, ToolStatus.OK)
            parts += [
                "  ",
                ("→ ", "$text-muted"),
                (outcome, "$text-error" if failed else "$text-muted"),
            ]
        return Content.assemble(*parts)

    def _sync_earlier(self) -> None:
        run = self.run
        hidden = len(run.entries) - len(self._shown) if run is not None and self._shown else 0
        line = self.query_one(".task-earlier", Static)
        shown = hidden > 0 and not self.folded
        if hidden != self._hidden:  # an update lays the screen out again: only when it changed
            self._hidden = hidden
            line.update(
                Content.styled(f"… {hidden} earlier (click or ctrl+o to see all)", "italic"),
                layout=line.display,
            )
        if line.display != shown:
            line.display = shown

    def sync(self) -> None:
        """Read the entry again: the head, the fold, and which nested entries show."""
        if not self._ready:
            return
        self.set_class(self.folded, "-folded")
        self.sync_window()
        self.query_one(".task-head", Static).update(self._head(), layout=False)  # one row, always
        note = self.query_one(".task-note", Static)
        if self.entry.note != self._note:
            self._note = self.entry.note
            note.update(Content(safe_text(self.entry.note)))
        if note.display != bool(self.entry.note):
            note.display = bool(self.entry.note)
        wanted = self._wanted()
        if len(wanted) != len(self._shown) or any(
            a is not b for a, b in zip(wanted, self._shown, strict=True)
        ):
            self.call_later(self.show_entries)
        else:
            self._sync_earlier()
        self._spinner.keep(self._live and self._animated)

    def sync_window(self) -> None:
        """A running task, not opened, keeps one size while it streams, unless a question of
        its subagent's waits in it: then it grows to show the question whole."""
        from dcode.tui.approval_widget import ApprovalWidget

        windowed = self._live and not self.expanded and not self.query(ApprovalWidget)
        self.set_class(windowed, "-windowed")

    # -- opening -------------------------------------------------------------------------

    def set_expanded(self, expanded: bool) -> None:
        if expanded == self.expanded:
            return
        self.expanded = expanded
        from dcode.tui.transcript.nested_answer import NestedAnswer

        for child in self.query_one(".task-body", Vertical).children:
            if isinstance(child, ToolGroupView):
                child.set_expanded(expanded)
            elif isinstance(child, NestedAnswer):
                child.set_full(expanded)
        self.sync()
