"""One widget per tool call, and the group that holds one step's calls.

A call shows its name and a one-line argument summary, a spinner while it runs (with the last
lines a shell command has printed so far under it, and the count of its lines), then its status
and a short preview of the result. A click (or Ctrl+O for all of them) shows the full output, and
edits show their diff, and a video read shows its frames (``video_view.FrameSheet``). An output
too large for the model says so, and where it is saved; a click on that line opens the file
(``screens.file_view``). A finished step of several calls folds to "Ran 3 tools"; failed calls
stay visible under the fold. A ``task`` call is a widget of its own (``task_view.TaskView``),
which stays visible under the fold too, and folds by itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from dcode.agent.events import ToolStatus
from dcode.terminal_text import safe_text
from dcode.tui.transcript.diff import diff_stats, render_diff
from dcode.tui.transcript.entries import ToolCallEntry, ToolGroupEntry
from dcode.tui.transcript.icons import STATUS_ICONS, Spinner
from dcode.tui.transcript.video_view import FrameSheet

if TYPE_CHECKING:
    from textual.widget import Widget

    from dcode.tui.approval_widget import ApprovalWidget

PREVIEW_LINES = 3
COLLAPSED_DIFF_LINES = 12
FULL_OUTPUT_LINES = 2000

CallWidget = Callable[[ToolCallEntry, bool, bool], "Widget"]
"""Builds the widget for a call (``expanded``, ``animate``): ``build.call_view``."""


class Foldable:
    """Mixin for the widget of a call that opens and folds by itself: a click on it, or Ctrl+O
    for all of them (through its step's ``ToolGroupView``), shows what it keeps folded. The
    widget of a call drawn as a task (a subagent's, an async task's) is one, and stays visible
    under a step's fold.

    Textual calls the click handler of every class in the MRO, in order: so a widget lists this
    before its Textual base, and says with ``FOLDS_ON_CLICK`` (never an ``on_click`` of its own,
    which would run as well) whether a click anywhere on it folds it."""

    expanded: bool
    FOLDS_ON_CLICK: ClassVar[bool] = True
    """False for a widget whose click is on a part of it (a task's, on its head)."""

    def sync(self) -> None:
        """Read the entry again and draw what it shows now."""
        raise NotImplementedError

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self.expanded:
            self.expanded = expanded
            self.sync()

    def toggle(self) -> None:
        self.set_expanded(not self.expanded)

    def on_click(self, event: events.Click) -> None:
        event.stop()  # not the step's fold
        if self.FOLDS_ON_CLICK:
            self.toggle()


class CallsWithin(Foldable):
    """The widget of a call that holds calls of its own (a task's, ``task_view.TaskView``)."""

    def sync_window(self) -> None:
        """A question shown in one of its calls: its window grows to show it."""
        raise NotImplementedError


def _clip(text: str, lines: int) -> tuple[str, int]:
    rows = text.rstrip("\n").splitlines()
    return "\n".join(rows[:lines]), max(0, len(rows) - lines)


class SavedOutputLine(Static):
    """ "Output cut for the model; the full output is saved at …": a click opens the file."""

    DEFAULT_CSS = """
    SavedOutputLine { padding: 0 0 0 2; color: $text-warning; }
    SavedOutputLine:hover { background: $boost; }
    """

    path = ""

    def show(self, path: str) -> None:
        self.path = path
        self.update(
            Content.assemble(
                "output cut for the model; the full output is saved at ",
                (safe_text(path), "underline"),
                ("  (click to open)", "$text-muted italic"),
            )
        )
        self.display = bool(path)

    def on_click(self, event: events.Click) -> None:
        event.stop()  # not the call's expand-and-fold
        if self.path:
            from dcode.tui.screens.file_view import FileViewScreen

            self.app.push_screen(FileViewScreen(Path(self.path)))


class ToolCallView(Foldable, Vertical):
    DEFAULT_CSS = """
    ToolCallView {
        height: auto;
        padding: 0 0 0 1;
    }
    ToolCallView > .tool-head { color: $text; }
    ToolCallView > .tool-body {
        color: $text-muted;
        padding: 0 0 0 2;
    }
    ToolCallView.-error > .tool-body { color: $text-error; }
    ToolCallView > .tool-note { padding: 0 0 0 2; color: $text-warning; }
    ToolCallView > .tool-tail {
        color: $text-muted;
        padding: 0 0 0 2;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    ToolCallView:hover > .tool-head { background: $boost; }
    """

    def __init__(
        self, entry: ToolCallEntry, *, expanded: bool = False, animate: bool = True
    ) -> None:
        super().__init__()
        self.entry = entry
        self.expanded = expanded
        self._animated = animate
        self._spinner = Spinner(
            self, lambda: self.query_one(".tool-head", Static).update(self._head())
        )

    def compose(self) -> ComposeResult:
        yield Static(classes="tool-head")
        yield Static(classes="tool-tail")
        yield Static(classes="tool-body")
        yield SavedOutputLine(classes="tool-saved")
        yield Static(classes="tool-note")

    def on_mount(self) -> None:
        self.entry.view = self
        self.sync()
        if self.entry.approval is not None and not self.entry.approval.future.done():
            self.call_later(self.show_approval)

    def on_unmount(self) -> None:
        if self.entry.view is self:
            self.entry.view = None
        self._spinner.stop()

    def _head(self) -> Content:
        entry = self.entry
        if entry.running:
            icon, style = self._spinner.mark, "$text-accent"
        else:
            assert entry.status is not None
            icon, style = STATUS_ICONS[entry.status]
        name, summary = safe_text(entry.name), safe_text(entry.summary)
        if name and summary.startswith(name):
            summary = summary[len(name) :].strip()
        if not summary and entry.args_chars and entry.running:
            summary = f"… {entry.args_chars} chars of arguments"
        parts: list[tuple[str, str] | str] = [(icon, style), " ", (name or "tool", "bold")]
        if summary:
            parts += [" ", (summary.splitlines()[0], "$text-muted")]
        if entry.running and entry.progress:
            parts += ["  ", (safe_text(entry.progress), "$text-accent")]
        if entry.running and entry.tail_lines > len(entry.tail.splitlines()):
            parts += ["  ", (f"{entry.tail_lines:,} lines", "$text-muted")]
        if diff := self.entry.diff:
            added, removed = diff_stats(diff)
            parts += ["  ", (f"+{added}", "$text-success"), " ", (f"-{removed}", "$text-error")]
        return Content.assemble(*parts)

    def _body(self) -> Content:
        entry = self.entry
        if entry.running or (
            entry.note and entry.status in (ToolStatus.DENIED, ToolStatus.CANCELLED)
        ):
            return Content("")  # a call the user rejected: its note ("rejected: …") says it once
        diff = entry.diff if entry.status is ToolStatus.OK else ""
        if entry.frames is not None and not self.expanded:
            return Content("")  # the frame sheet below says it: one line and the sheet
        if diff:
            return render_diff(diff, None if self.expanded else COLLAPSED_DIFF_LINES)
        if self.expanded and entry.output:
            text, hidden = _clip(safe_text(entry.output), FULL_OUTPUT_LINES)
            content = Content(text)
            if hidden:
                content += Content.styled(f"\n… {hidden} more lines", "$text-muted")
            return content
        preview = entry.preview or entry.output
        text, hidden = _clip(safe_text(preview), PREVIEW_LINES)
        if not text:
            return Content("")
        content = Content("└ ") + Content(text.replace("\n", "\n  "))
        full_hidden = _clip(entry.output, PREVIEW_LINES)[1] if entry.output else hidden
        if full_hidden:
            content += Content.styled(
                f"\n  … {full_hidden} more lines (click or ctrl+o)", "$text-muted italic"
            )
        return content

    def _tail(self) -> Content:
        """The last lines a running command printed, each on one row (drawn safe: they are the
        command's), led by a rule."""
        if not self.entry.running or not self.entry.tail:
            return Content("")
        rows = safe_text(self.entry.tail).split("\n")
        return Content("\n").join(Content.assemble(("│ ", "$text-muted"), row) for row in rows)

    def sync(self) -> None:
        entry = self.entry
        self.set_class(entry.failed, "-error")
        self.query_one(".tool-head", Static).update(self._head())
        tail = self._tail()
        tail_widget = self.query_one(".tool-tail", Static)
        tail_widget.update(tail)
        tail_widget.display = bool(tail.plain)
        body = self._body()
        body_widget = self.query_one(".tool-body", Static)
        body_widget.update(body)
        body_widget.display = bool(body.plain)
        self.query_one(SavedOutputLine).show(entry.saved_to if not entry.running else "")
        note = self.query_one(".tool-note", Static)
        note.update(Content(safe_text(entry.note)))
        note.display = bool(entry.note)
        if entry.frames is not None and not self.query_children(FrameSheet):
            self.mount(FrameSheet(entry.frames), before=note)
        self._spinner.keep(entry.running and self._animated)

    async def show_approval(self) -> None:
        from dcode.tui.approval_widget import ApprovalWidget, open_approvals

        pending = self.entry.approval
        if pending is None or pending.future.done() or self.query(ApprovalWidget):
            return
        widget = self.question()
        asking = open_approvals(self.screen)  # another question open: it keeps the keys
        await self.mount(widget, before=self.query_one(".tool-note"))
        self._sync_tasks()
        if not asking:
            widget.focus()
            widget.scroll_visible(animate=False)

    def question(self) -> ApprovalWidget:
        """The widget that asks the pending approval's question."""
        from dcode.tui.approval_widget import ApprovalWidget

        pending = self.entry.approval
        assert pending is not None
        return ApprovalWidget(
            pending.request, pending.future, arm_delay=pending.arm_delay, asker=pending.asker
        )

    async def hide_approval(self) -> None:
        from dcode.tui.approval_widget import ApprovalWidget

        await self.query(ApprovalWidget).remove()
        self._sync_tasks()

    def _sync_tasks(self) -> None:
        """The tasks this call is nested in: a question shown in one makes it grow to show it."""
        for ancestor in self.ancestors:
            if isinstance(ancestor, CallsWithin):
                ancestor.sync_window()


class ToolGroupView(Vertical):
    DEFAULT_CSS = """
    ToolGroupView {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 0 0 1;
    }
    ToolGroupView > .group-head { color: $text-muted; padding: 0 0 0 1; }
    ToolGroupView > .group-head:hover { background: $boost; }
    ToolGroupView.-single > .group-head { display: none; }
    ToolGroupView.-tasks > .group-head { display: none; }
    ToolGroupView.-folded > ToolCallView { display: none; }
    ToolGroupView.-folded > ToolCallView.-error { display: block; }
    """

    def __init__(
        self,
        entry: ToolGroupEntry,
        call_widget: CallWidget,
        *,
        expanded: bool = False,
        animate: bool = True,
    ) -> None:
        super().__init__()
        self.entry = entry
        self.expanded = expanded
        self._animated = animate
        self._call_widget = call_widget

    def compose(self) -> ComposeResult:
        yield Static(classes="group-head")
        for call in self.entry.calls:
            yield self._call_widget(call, self.expanded, self._animated)

    def on_mount(self) -> None:
        self.sync()

    async def add_call(self, call: ToolCallEntry) -> Widget:
        view = self._call_widget(call, self.expanded, self._animated)
        await self.mount(view)
        self.sync()
        return view

    async def replace_call(self, call: ToolCallEntry) -> None:
        """``call`` has turned out to be a ``task`` call (its name came late): its widget is
        the subagent's now."""
        old = call.view
        if old is None or old.parent is not self:
            return
        await self.mount(self._call_widget(call, self.expanded, self._animated), after=old)
        await old.remove()

    def _head(self) -> Content:
        calls = self.entry.calls
        counts = Counter(safe_text(call.name) for call in calls)
        names = ", ".join(
            f"{name} ×{count}" if count > 1 else name for name, count in counts.items()
        )
        failed = sum(1 for call in calls if call.failed)
        verb = "Running" if self.entry.running else "Ran"
        icon = "▾" if self.expanded or self.entry.running else "▸"
        parts: list[tuple[str, str] | str] = [
            (f"{icon} {verb} {len(calls)} tools", "bold"),
            "  ",
            (names, "$text-muted"),
        ]
        if failed:
            parts += ["  ", (f"{failed} failed", "$text-error")]
        return Content.assemble(*parts)

    def sync(self) -> None:
        single = len(self.entry.calls) <= 1
        self.set_class(single, "-single")
        self.set_class(
            all(call.is_task or call.is_async_task for call in self.entry.calls), "-tasks"
        )  # each says it itself
        self.set_class(
            not single and not self.expanded and not self.entry.running and not self.entry.open,
            "-folded",
        )
        self.query_one(".group-head", Static).update(self._head())
        for view in self.query_children(ToolCallView):
            view.set_class(view.entry.failed, "-error")

    def set_expanded(self, expanded: bool) -> None:
        self.expanded = expanded
        for view in self.children:
            if isinstance(view, Foldable):
                view.set_expanded(expanded)
        self.sync()

    def on_click(self, event: events.Click) -> None:
        # Clicks on a call expand that call (ToolCallView stops them); this is the header.
        event.stop()
        self.expanded = not self.expanded
        self.sync()
