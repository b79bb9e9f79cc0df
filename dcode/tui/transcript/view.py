"""The scrolling transcript, with only a window of entries mounted.

``entries`` (the ``TranscriptModel``'s, which events fill) holds the whole conversation as
data; ``entries[_first:]`` have widgets. New entries
mount at the bottom; once the window overflows by a batch and the view is following the bottom,
the oldest batch is unmounted. Scrolling to the top mounts the previous batch, keeping the
visible text where it was. So memory and layout cost stay flat however long the session gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.containers import VerticalScroll
from textual.widget import Widget

from dcode.agent.events import ApprovalRequested, Event
from dcode.tui.textual_internals import anchor_released
from dcode.tui.transcript.blocks import OlderMarker, ShellOutput
from dcode.tui.transcript.build import entry_widget
from dcode.tui.transcript.entries import (
    Entry,
    NoticeLevel,
    ShellEntry,
    TaskRun,
    ToolCallEntry,
    ToolGroupEntry,
    UserEntry,
    VideoSeen,
)
from dcode.tui.transcript.model import Change, Touched, TranscriptModel
from dcode.tui.transcript.nested_answer import NestedAnswer
from dcode.tui.transcript.plain_lines import PlainLines
from dcode.tui.transcript.task_view import TaskView
from dcode.tui.transcript.tools import Foldable, ToolCallView, ToolGroupView

if TYPE_CHECKING:
    from dcode.agent.decisions import ApprovalDecision
    from dcode.tui.transcript.answer import AssistantMessage

ANSWER_MODULE = "dcode.tui.transcript.answer"  # with Markdown, loaded after the first frame


def answer_view(view: object) -> AssistantMessage | None:
    """``view`` if it shows an answer. No answer can exist before its module is loaded, so
    asking does not load it (nor Markdown): the first frame does not wait for either."""
    module = sys.modules.get(ANSWER_MODULE)
    return view if module is not None and isinstance(view, module.AssistantMessage) else None


WINDOW = 50
BATCH = 25
RESUME_ENTRIES = 16  # entries a resumed session mounts before anything is scrolled
ARGS_REFRESH = 0.1


class Transcript(VerticalScroll, PlainLines, can_focus=False):
    DEFAULT_CSS = """
    Transcript {
        height: 1fr;
        padding: 0 1 1 1;
        background: $background;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(
        self,
        *,
        window: int = WINDOW,
        batch: int = BATCH,
        animate: bool = True,
        header: Widget | None = None,
        id: str | None = None,
    ) -> None:
        """``header``: a widget that opens the transcript and stays there (a new session too)."""
        super().__init__(id=id)
        self._header = header
        self.window = window
        self.batch_size = batch
        self.animated = animate
        self.model = TranscriptModel()
        self.expanded = False
        self._first = 0
        self._marker = OlderMarker()
        self._loading_older = False
        self._refreshed: dict[ToolCallEntry, float] = {}
        self._progress_due: set[ToolCallEntry] = set()
        self.frames = 0  # layouts of the screen so far: a widget can tell whether it has had one
        self._paint_waiters: list[asyncio.Future[None]] = []

    def compose(self) -> Iterable[Widget]:
        if self._header is not None:
            yield self._header
        yield self._marker

    def on_mount(self) -> None:
        self.anchor()
        self.screen.screen_layout_refresh_signal.subscribe(self, self._laid_out, immediate=True)

    def _laid_out(self, _: object) -> None:
        self.frames += 1
        waiters, self._paint_waiters = self._paint_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- window --------------------------------------------------------------------------

    @property
    def entries(self) -> list[Entry]:
        return self.model.entries

    @property
    def mounted_count(self) -> int:
        return len(self.entries) - self._first

    @property
    def following(self) -> bool:
        return self.is_anchored and not anchor_released(self)

    def _build(self, entry: Entry) -> Widget:
        return entry_widget(entry, expanded=self.expanded, animate=self.animated)

    async def _mount(self, entry: Entry) -> Widget:
        """Mount the widget for ``entry``, just added to the entries."""
        widget = self._build(entry)
        await self.mount(widget)
        if self.mounted_count > self.window + self.batch_size and self.following:
            await self._prune()
        return widget

    async def _prune(self) -> None:
        keep_from = len(self.entries) - self.window
        doomed = [
            entry.view for entry in self.entries[self._first : keep_from] if entry.view is not None
        ]
        for entry in self.entries[self._first : keep_from]:
            entry.view = None
        self._first = keep_from
        self._marker.set_count(self._first)
        if doomed:
            await self.remove_children(doomed)

    async def load_older(self) -> int:
        """Mount the batch of entries just above the window; returns how many were mounted."""
        if self._first == 0 or self._loading_older:
            return 0
        self._loading_older = True
        try:
            start = max(0, self._first - self.batch_size)
            widgets = [self._build(entry) for entry in self.entries[start : self._first]]
            height_before = self.virtual_size.height
            self._first = start
            await self.mount_all(widgets, after=self._marker)
            self._marker.set_count(self._first)

            def keep_place() -> None:
                grown = self.virtual_size.height - height_before
                if grown > 0:
                    self.scroll_to(y=self.scroll_y + grown, animate=False, immediate=True)

            self.call_after_refresh(keep_place)
            self.call_after_refresh(self._fill_viewport)
            return len(widgets)
        finally:
            self._loading_older = False

    def _fill_viewport(self) -> None:
        """With nothing to scroll, scrolling up can never ask for more: mount it now."""
        if self._first > 0 and self.max_scroll_y == 0:
            self.call_later(self.load_older)

    async def on_older_marker_pressed(self, event: OlderMarker.Pressed) -> None:
        event.stop()
        await self.load_older()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < 1 and old_value >= 1 and self._first > 0:
            self.call_later(self.load_older)

    async def load(self, replayed: TranscriptModel | list[Entry]) -> None:
        """Replace the transcript with a resumed session's (the model its replay left, which
        the next turn continues), mounting only the window."""
        await self.clear()
        self.model = (
            replayed
            if isinstance(replayed, TranscriptModel)
            else TranscriptModel.of_entries(replayed)
        )
        # Enough to fill the screen; scrolling up mounts the rest, a batch at a time.
        self._first = max(0, len(self.entries) - min(self.window, RESUME_ENTRIES))
        widgets = [self._build(entry) for entry in self.entries[self._first :]]
        self._marker.set_count(self._first)
        if widgets:
            await self.mount_all(widgets)
        self.anchor()
        self.call_after_refresh(self._fill_viewport)

    async def clear(self) -> None:
        await self.remove_children(
            [child for child in self.children if child not in (self._marker, self._header)]
        )
        for entry in self.entries:
            entry.view = None
        self.model = TranscriptModel()
        self._first = 0
        self._refreshed.clear()
        self._progress_due.clear()
        self._marker.set_count(0)

    # -- conversation ---------------------------------------------------------------------
    #
    # The model (``TranscriptModel``) turns whole events into entries; this draws what each
    # one touched: a widget mounted for a new entry, a widget told to sync for a changed one.

    async def apply(self, event: Event) -> None:
        """One event of a turn into the transcript."""
        await self._draw(self.model.apply(event))

    async def _draw(self, touched: Iterable[Touched]) -> None:
        for item in touched:
            await self._show(item)

    async def _show(self, item: Touched) -> None:
        entry = item.entry
        match item.change:
            case Change.ADDED:
                await self._show_added(item)
            case Change.CALL_ADDED if item.group is not None and isinstance(
                item.group.view, ToolGroupView
            ):
                assert isinstance(entry, ToolCallEntry)
                await item.group.view.add_call(entry)
            case Change.TEXT | Change.REASONING if isinstance(entry.view, NestedAnswer):
                entry.view.text_arrived()
            case Change.TEXT if (view := answer_view(entry.view)) is not None:
                view.text_arrived()
            case Change.REASONING if (view := answer_view(entry.view)) is not None:
                await view.sync_reasoning()
            case Change.STREAM_ENDED:
                await self._show_all_text(item)
            case Change.SETTLED if isinstance(entry.view, NestedAnswer):
                entry.view.sync()
            case Change.SETTLED if (view := answer_view(entry.view)) is not None:
                await view.finish()
            case Change.CHANGED:
                self._sync(entry)
            case Change.STREAMING_ARGS:
                assert isinstance(entry, ToolCallEntry)
                self._refresh_args(entry)
            case Change.RUNNING_NEWS:
                assert isinstance(entry, ToolCallEntry)
                self._refresh_running(entry)
            case Change.BECAME_TASK:
                assert isinstance(entry, ToolCallEntry)
                group = self.model.group_of(entry)
                if (
                    isinstance(entry.view, ToolCallView)
                    and group is not None
                    and isinstance(group.view, ToolGroupView)
                ):
                    await group.view.replace_call(entry)
                self._sync(entry)
            case Change.APPROVAL_SHOWN if isinstance(entry.view, ToolCallView):
                await entry.view.show_approval()
            case Change.APPROVAL_HIDDEN if isinstance(entry.view, ToolCallView):
                await entry.view.hide_approval()

    async def _show_added(self, item: Touched) -> None:
        """A new entry: mounted at the bottom, or in its task's view."""
        lane, entry = item.lane, item.entry
        assert isinstance(entry, Entry)
        if isinstance(lane, TaskRun):
            call = self.model.task_call(lane.path)
            if call is not None and isinstance(call.view, TaskView):
                await call.view.entry_added(entry)
            return
        await self._mount(entry)
        if isinstance(entry, (UserEntry, ShellEntry)):
            self.anchor()

    async def _show_all_text(self, item: Touched) -> None:
        """The model has sent its last piece: put the whole answer on screen now, without
        waiting for the next paced write, and return once it has been painted. The events
        that follow (the step recorded, the turn's end) wait meanwhile: the frame that shows
        the answer's last words goes first. A subagent's answer is written at once too, but
        nothing waits for its frame: the other agents' events go on meanwhile."""
        entry = item.entry
        if isinstance(entry.view, NestedAnswer):
            entry.view.sync()
        elif (view := answer_view(entry.view)) is not None:
            await view.write_all()
            if not isinstance(item.lane, TaskRun):
                await self.painted()

    async def add_user(
        self, text: str, videos: list[VideoSeen] | None = None, files: tuple[str, ...] = ()
    ) -> None:
        await self._draw(
            self.model.add_user(UserEntry(text=text, videos=list(videos or ()), files=files))
        )

    async def notice(
        self,
        text: str,
        level: NoticeLevel = NoticeLevel.INFO,
        *,
        path: str | None = None,
        agent: tuple[str, ...] = (),
    ) -> None:
        await self._draw(self.model.notice(text, level, path=path, agent=agent))

    async def add_shell(self, entry: ShellEntry) -> None:
        await self._draw(self.model.add_shell(entry))

    def refresh_entry(self, entry: Entry) -> None:
        view = entry.view
        if isinstance(view, ShellOutput):
            view.sync()

    async def painted(self, timeout: float = 0.25) -> None:
        """Lay out and paint the screen now, and return once it has been (``timeout`` at most).

        Waits for the screen's layout signal, which follows the paint: a callback "after
        refresh" also runs when a batch of updates held the refresh back. The screen is asked
        for the layout itself, as widgets just mounted ask only once they have run."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._paint_waiters.append(done)
        self.screen.refresh(repaint=False, layout=True)  # a layout, not a repaint of every cell
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done, timeout)

    def _sync(self, entry: Entry | ToolCallEntry) -> None:
        match entry:
            case ToolGroupEntry() if isinstance(entry.view, ToolGroupView):
                entry.view.sync()
            case ToolCallEntry():
                self._sync_call(entry)
            case ShellEntry():
                self.refresh_entry(entry)

    def _sync_call(self, call: ToolCallEntry) -> None:
        if isinstance(call.view, Foldable):
            call.view.sync()
        group = self.model.group_of(call)
        if group is not None and isinstance(group.view, ToolGroupView):
            group.view.sync()

    def _refresh_args(self, call: ToolCallEntry) -> None:
        """Streaming arguments are counted on the call's line at most every ``ARGS_REFRESH`` s."""
        now = time.monotonic()
        if now - self._refreshed.get(call, 0.0) >= ARGS_REFRESH:
            self._refreshed[call] = now
            self._sync_call(call)

    def _refresh_running(self, call: ToolCallEntry) -> None:
        """Show a running call's news now, or (when it was shown less than ``ARGS_REFRESH`` s
        ago) once that has passed: the last news of a burst is shown too."""
        now = time.monotonic()
        if now - self._refreshed.get(call, 0.0) >= ARGS_REFRESH:
            self._refreshed[call] = now
            self._sync_call(call)
        elif call not in self._progress_due:
            self._progress_due.add(call)
            self.set_timer(ARGS_REFRESH, lambda: self._progress_later(call))

    def _progress_later(self, call: ToolCallEntry) -> None:
        self._progress_due.discard(call)
        self._refreshed[call] = time.monotonic()
        if call.running:
            self._sync_call(call)

    # -- approvals -------------------------------------------------------------------------

    async def show_approval(
        self,
        request: ApprovalRequested,
        future: asyncio.Future[ApprovalDecision],
        arm_delay: float = 0.0,
    ) -> None:
        await self._draw(self.model.show_approval(request, future, arm_delay))

    async def resolve_approval(
        self, call_id: str, approved: bool, feedback: str = "", agent: tuple[str, ...] = ()
    ) -> None:
        await self._draw(self.model.resolve_approval(call_id, approved, feedback, agent))

    async def withdraw_approval(self, call_id: str, agent: tuple[str, ...] = ()) -> None:
        if (call := self.model.call(call_id, agent)) is not None:
            await self._draw(self.model.withdraw_approval(call))

    @property
    def pending_approvals(self) -> list[ToolCallEntry]:
        """The turn's open questions, the subagents' included, oldest first."""
        return self.model.pending_approvals

    # -- the turn's end ----------------------------------------------------------------------

    async def finish_turn(self, *, interrupted: bool) -> bool:
        """Settle whatever the turn left open; True when the interrupt is marked on screen
        (``TranscriptModel.finish_turn``)."""
        touched, marked = self.model.finish_turn(interrupted=interrupted)
        await self._draw(touched)
        self._refreshed.clear()
        return marked

    def set_expanded(self, expanded: bool) -> None:
        self.expanded = expanded
        for entry in self.entries[self._first :]:
            if isinstance(entry.view, ToolGroupView):
                entry.view.set_expanded(expanded)

    def last_answer(self) -> str:
        return self.model.last_answer()
