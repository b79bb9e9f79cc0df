"""The scrolling transcript, with only a window of entries mounted.

``entries`` holds the whole conversation as data; ``entries[_first:]`` have widgets. New entries
mount at the bottom; once the window overflows by a batch and the view is following the bottom,
the oldest batch is unmounted. Scrolling to the top mounts the previous batch, keeping the
visible text where it was. So memory and layout cost stay flat however long the session gets.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual.containers import VerticalScroll
from textual.widget import Widget

from dcode.agent.events import ApprovalRequested, SubagentFinished, SubagentStarted, ToolStatus, UsageUpdated
from dcode.terminal_text import safe_prefix, safe_text
from dcode.tui.transcript.blocks import OlderMarker, ShellOutput
from dcode.tui.transcript.build import entry_widget
from dcode.tui.transcript.entries import (
    TASK_TOOL,
    AssistantEntry,
    Entry,
    Lane,
    NoticeEntry,
    NoticeLevel,
    PendingApproval,
    ShellEntry,
    TaskRun,
    ToolCallEntry,
    ToolGroupEntry,
    UserEntry,
    VideoSeen,
)
from dcode.tui.textual_internals import anchor_released
from dcode.tui.transcript.nested_answer import NestedAnswer
from dcode.tui.transcript.plain_lines import PlainLines
from dcode.tui.transcript.task_lanes import TaskLanes
from dcode.tui.transcript.task_view import TaskView
from dcode.tui.transcript.tools import ToolCallView, ToolGroupView

if TYPE_CHECKING:
    from dcode.media.frames import FrameStrip
    from dcode.tui.transcript.answer import AssistantMessage

ANSWER_MODULE = "dcode.tui.transcript.answer"  # with Markdown, loaded after the first frame


def answer_view(view: object) -> AssistantMessage | None:
    """``view`` if it shows an answer. No answer can exist before its module is loaded, so
    asking does not load it (nor Markdown): the first frame does not wait for either."""
    module = sys.modules.get(ANSWER_MODULE)
    return view if module is not None and isinstance(view, module.AssistantMessage) else None

WINDOW = 50
BATCH = 25
CallKey = tuple[tuple[str, ...], str]
"""A call as the transcript knows it: the path of the agent that made it, and its id."""
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
        self, *, window: int = WINDOW, batch: int = BATCH, animate: bool = True, header: Widget | None = None, id: str | None = None
    ) -> None:
        """``header``: a widget that opens the transcript and stays there (a new session too)."""
        super().__init__(id=id)
        self._header = header
        self.window = window
        self.batch_size = batch
        self.animated = animate
        self.entries: list[Entry] = []
        self.expanded = False
        self._first = 0
        self._marker = OlderMarker()
        self._calls: dict[CallKey, ToolCallEntry] = {}
        self._group_of: dict[CallKey, ToolGroupEntry] = {}
        self._main = Lane()
        self._tasks = TaskLanes()
        self._loading_older = False
        self._args_refreshed: dict[CallKey, float] = {}
        self._progress_due: set[CallKey] = set()
        self._turn_calls: list[CallKey] = []
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
    def mounted_count(self) -> int:
        return len(self.entries) - self._first

    @property
    def following(self) -> bool:
        return self.is_anchored and not anchor_released(self)

    def _build(self, entry: Entry) -> Widget:
        return entry_widget(entry, expanded=self.expanded, animate=self.animated)

    async def add(self, entry: Entry) -> Widget:
        self.entries.append(entry)
        widget = self._build(entry)
        await self.mount(widget)
        if self.mounted_count > self.window + self.batch_size and self.following:
            await self._prune()
        return widget

    async def _prune(self) -> None:
        keep_from = len(self.entries) - self.window
        doomed = [entry.view for entry in self.entries[self._first : keep_from] if entry.view is not None]
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

    async def load(self, entries: list[Entry]) -> None:
        """Replace the transcript with ``entries`` (a resumed session), mounting only the window."""
        await self.clear()
        self.entries = list(entries)
        self._index_calls(self.entries, ())
        # Enough to fill the screen; scrolling up mounts the rest, a batch at a time.
        self._first = max(0, len(self.entries) - min(self.window, RESUME_ENTRIES))
        widgets = [self._build(entry) for entry in self.entries[self._first :]]
        self._marker.set_count(self._first)
        if widgets:
            await self.mount_all(widgets)
        self.anchor()
        self.call_after_refresh(self._fill_viewport)

    async def clear(self) -> None:
        await self.remove_children([child for child in self.children if child not in (self._marker, self._header)])
        for entry in self.entries:
            entry.view = None
        self.entries = []
        self._first = 0
        self._calls.clear()
        self._group_of.clear()
        self._main = Lane()
        self._tasks.clear()
        self._turn_calls = []
        self._marker.set_count(0)

    def _index_calls(self, entries: list[Entry], agent: tuple[str, ...]) -> None:
        """Know the calls of loaded entries by their key, a subagent's calls included."""
        for entry in entries:
            if isinstance(entry, ToolGroupEntry):
                for call in entry.calls:
                    self._calls[(agent, call.call_id)] = call
                    self._group_of[(agent, call.call_id)] = entry
                    if call.task is not None:
                        self._tasks.add(call)
                        self._index_calls(call.task.entries, call.task.path)

    # -- conversation ---------------------------------------------------------------------
    #
    # Each agent streams into a lane of its own: the session's agent into the transcript, a
    # subagent into its task's nested view (``task_lanes``). ``agent`` is the path an event
    # carries; calls are known by (agent, call id), as two agents may reuse an id.

    def _lane(self, agent: tuple[str, ...]) -> Lane | None:
        return self._main if not agent else self._tasks.lane(agent)

    async def _add_to(self, lane: Lane, entry: Entry) -> None:
        if isinstance(lane, TaskRun):
            await self._tasks.add_entry(lane, entry)
        else:
            await self.add(entry)

    async def add_user(self, text: str, videos: list[VideoSeen] | None = None, files: tuple[str, ...] = ()) -> None:
        self._close_step()
        await self.add(UserEntry(text=text, videos=list(videos or ()), files=files))
        self.anchor()

    async def notice(self, text: str, level: NoticeLevel = NoticeLevel.INFO, *, path: str | None = None, agent: tuple[str, ...] = ()) -> None:
        lane = self._lane(agent) or self._main
        if lane is not self._main:
            self._close_group(lane)
        await self._add_to(lane, NoticeEntry(text=text, level=level, path=path))

    async def add_shell(self, entry: ShellEntry) -> None:
        self._close_step()
        await self.add(entry)
        self.anchor()

    def refresh_entry(self, entry: Entry) -> None:
        view = entry.view
        if isinstance(view, ShellOutput):
            view.sync()

    async def _live_entry(self, lane: Lane) -> AssistantEntry:
        if lane.live is None:
            self._close_group(lane)
            lane.live = AssistantEntry(streaming=True)
            await self._add_to(lane, lane.live)
        return lane.live

    async def append_text(self, text: str, agent: tuple[str, ...] = ()) -> None:
        if (lane := self._lane(agent)) is None:
            return
        entry = await self._live_entry(lane)
        shown, entry.held = safe_prefix(entry.held + text)
        if not shown:
            return
        entry.text += shown
        if (view := answer_view(entry.view)) is not None:
            view.text_arrived()
        elif isinstance(entry.view, NestedAnswer):
            entry.view.text_arrived()

    async def append_reasoning(self, text: str, agent: tuple[str, ...] = ()) -> None:
        if (lane := self._lane(agent)) is None:
            return
        entry = await self._live_entry(lane)
        shown, entry.held_reasoning = safe_prefix(entry.held_reasoning + text)
        if not shown:
            return
        entry.reasoning += shown
        if (view := answer_view(entry.view)) is not None:
            await view.sync_reasoning()
        elif isinstance(entry.view, NestedAnswer):
            entry.view.text_arrived()

    async def show_all_text(self, agent: tuple[str, ...] = ()) -> None:
        """The model has sent its last piece: put the whole answer on screen now, without
        waiting for the next paced write, and return once it has been painted. The events
        that follow (the step recorded, the turn's end) wait meanwhile: the frame that shows
        the answer's last words goes first. A subagent's answer is written at once too, but
        nothing waits for its frame: the other agents' events go on meanwhile."""
        lane = self._lane(agent)
        entry = lane.live if lane is not None else None
        if entry is not None and isinstance(entry.view, NestedAnswer):
            entry.view.sync()
        elif entry is not None and (view := answer_view(entry.view)) is not None:
            await view.write_all()
            if lane is self._main:
                await self.painted()

    async def painted(self, timeout: float = 0.25) -> None:
        """Lay out and paint the screen now, and return once it has been (``timeout`` at most).

        Waits for the screen's layout signal, which follows the paint: a callback "after
        refresh" also runs when a batch of updates held the refresh back. The screen is asked
        for the layout itself, as widgets just mounted ask only once they have run."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._paint_waiters.append(done)
        self.screen.refresh(repaint=False, layout=True)  # a layout, not a repaint of every cell
        try:
            await asyncio.wait_for(done, timeout)
        except asyncio.TimeoutError:
            pass

    async def finish_message(self, text: str, agent: tuple[str, ...] = ()) -> None:
        """One model response is complete: settle its text; its tool calls form one step."""
        if (lane := self._lane(agent)) is None:
            return
        entry = lane.live
        lane.live = None
        if entry is None and text.strip():
            entry = AssistantEntry(text=safe_text(text))
            await self._add_to(lane, entry)
        elif entry is not None:
            await self._settle_answer(entry, text)
        self._close_group(lane)

    @staticmethod
    async def _settle_answer(entry: AssistantEntry, text: str = "", *, interrupted: bool = False) -> None:
        entry.streaming = False
        entry.interrupted = interrupted
        # The whole text, when the model's step gives it; else what streamed, with its end.
        entry.text = safe_text(text) if text else entry.text + safe_text(entry.held)
        entry.reasoning += safe_text(entry.held_reasoning)
        entry.held = entry.held_reasoning = ""
        if (view := answer_view(entry.view)) is not None:
            await view.finish()
        elif isinstance(entry.view, NestedAnswer):
            entry.view.sync()

    def _close_group(self, lane: Lane) -> None:
        if lane.open_group is not None:
            lane.open_group.open = False
            self._sync_group(lane.open_group)
            lane.open_group = None

    def _close_step(self) -> None:
        self._main.live = None
        self._close_group(self._main)

    def _sync_group(self, group: ToolGroupEntry) -> None:
        if isinstance(group.view, ToolGroupView):
            group.view.sync()

    async def _call(self, call_id: str, name: str, agent: tuple[str, ...] = ()) -> ToolCallEntry:
        key = (agent, call_id)
        call = self._calls.get(key)
        if call is not None:
            if name and not call.name:
                call.name = name
            return call
        call = ToolCallEntry(call_id=call_id, name=name)
        self._calls[key] = call
        self._turn_calls.append(key)
        # A subagent not known yet (its start still on its way) cannot lose a call: the
        # transcript takes it.
        lane = self._lane(agent) or self._main
        group = lane.open_group
        if group is None:
            group = ToolGroupEntry()
            lane.open_group = group
            group.calls.append(call)
            self._group_of[key] = group
            await self._add_to(lane, group)
        else:
            group.calls.append(call)
            self._group_of[key] = group
            if isinstance(group.view, ToolGroupView):
                await group.view.add_call(call)
        return call

    async def tool_started(self, call_id: str, name: str, agent: tuple[str, ...] = ()) -> None:
        await self._call(call_id, name, agent)

    def tool_args(self, call_id: str, delta: str, agent: tuple[str, ...] = ()) -> None:
        key = (agent, call_id)
        call = self._calls.get(key)
        if call is None:
            return
        call.args_chars += len(delta)
        now = time.monotonic()
        if now - self._args_refreshed.get(key, 0.0) >= ARGS_REFRESH:
            self._args_refreshed[key] = now
            self._sync_call(call, agent)

    def tool_progress(self, call_id: str, text: str, agent: tuple[str, ...] = ()) -> None:
        """A running call's progress, on its line (refreshed at most every ``ARGS_REFRESH`` s)."""
        call = self._calls.get((agent, call_id))
        if call is None or not call.running:
            return
        call.progress = text
        self._refresh_running(call, agent)

    def tool_output(self, call_id: str, tail: str, lines: int, agent: tuple[str, ...] = ()) -> None:
        """What a running call has printed so far (its last lines), under its line; refreshed
        as its progress is."""
        call = self._calls.get((agent, call_id))
        if call is None or not call.running:
            return
        call.tail, call.tail_lines = tail, lines
        self._refresh_running(call, agent)

    def _refresh_running(self, call: ToolCallEntry, agent: tuple[str, ...]) -> None:
        """Show a running call's news now, or (when it was shown less than ``ARGS_REFRESH`` s
        ago) once that has passed: the last news of a burst is shown too."""
        key = (agent, call.call_id)
        now = time.monotonic()
        if now - self._args_refreshed.get(key, 0.0) >= ARGS_REFRESH:
            self._args_refreshed[key] = now
            self._sync_call(call, agent)
        elif key not in self._progress_due:
            # The last report of a burst is shown too, once the interval has passed.
            self._progress_due.add(key)
            self.set_timer(ARGS_REFRESH, lambda: self._progress_later(call, agent))

    def _progress_later(self, call: ToolCallEntry, agent: tuple[str, ...]) -> None:
        key = (agent, call.call_id)
        self._progress_due.discard(key)
        self._args_refreshed[key] = time.monotonic()
        if call.running:
            self._sync_call(call, agent)

    async def tool_running(self, call_id: str, name: str, args: dict[str, Any], summary: str, agent: tuple[str, ...] = ()) -> None:
        call = await self._call(call_id, name, agent)
        call.name = name or call.name
        call.args = args
        call.summary = summary
        self._args_refreshed.pop((agent, call_id), None)
        group = self._group_of.get((agent, call_id))
        if call.is_task and isinstance(call.view, ToolCallView) and group is not None and isinstance(group.view, ToolGroupView):
            await group.view.replace_call(call)
        self._sync_call(call, agent)

    def tool_finished(
        self,
        call_id: str,
        name: str,
        status: ToolStatus,
        preview: str,
        output: str,
        diff: str = "",
        frames: FrameStrip | None = None,
        saved_to: str = "",
        agent: tuple[str, ...] = (),
    ) -> None:
        call = self._calls.get((agent, call_id))
        if call is None:
            return
        call.frames = VideoSeen(frames) if frames is not None else None
        call.status = status
        call.preview = preview
        call.output = output
        call.diff = diff  # what the write did (the approval's preview was what it would do)
        call.saved_to = saved_to
        if not call.name:
            call.name = name
        self._sync_call(call, agent)

    def _sync_call(self, call: ToolCallEntry, agent: tuple[str, ...]) -> None:
        if isinstance(call.view, (ToolCallView, TaskView)):
            call.view.sync()
        group = self._group_of.get((agent, call.call_id))
        if group is not None:
            self._sync_group(group)

    # -- subagents -------------------------------------------------------------------------

    async def subagent_started(self, event: SubagentStarted) -> None:
        """A ``task`` call's subagent has begun: the call's widget becomes its view."""
        parent = event.agent[:-1]
        call = await self._call(event.call_id, TASK_TOOL, parent)
        call.task = TaskRun(
            path=event.agent,
            agent_type=event.agent_type,
            description=event.description,
            thread_id=event.thread_id,
            started=time.monotonic(),
        )
        self._tasks.add(call)
        group = self._group_of.get((parent, call.call_id))
        if isinstance(call.view, ToolCallView) and group is not None and isinstance(group.view, ToolGroupView):
            await group.view.replace_call(call)
        self._sync_call(call, parent)

    def subagent_usage(self, event: UsageUpdated) -> None:
        """A subagent's model response: its tokens count for it and for the tasks above it."""
        for call in self._tasks.lineage(event.agent):
            assert call.task is not None
            call.task.input_tokens += event.input_tokens
            call.task.output_tokens += event.output_tokens
            self._sync_call(call, call.task.path[:-1])

    async def subagent_finished(self, event: SubagentFinished) -> None:
        call = self._tasks.call(event.agent)
        if call is None or call.task is None:
            return
        run = call.task
        run.status, run.result, run.error = event.status, event.result, event.error
        run.input_tokens, run.output_tokens = event.input_tokens, event.output_tokens
        run.num_turns, run.duration_ms = event.num_turns, event.duration_ms
        await self._settle_lane(run, interrupted=event.status is ToolStatus.CANCELLED)
        self._sync_call(call, run.path[:-1])

    async def _settle_lane(self, lane: Lane, *, interrupted: bool) -> bool:
        """End what ``lane`` was writing; True when an interrupt cut a partial answer short."""
        live, lane.live = lane.live, None
        marked = False
        if live is not None:
            marked = interrupted and bool(live.text.strip())
            await self._settle_answer(live, interrupted=marked)
        self._close_group(lane)
        return marked

    # -- approvals -------------------------------------------------------------------------

    async def show_approval(self, request: ApprovalRequested, future: asyncio.Future[Any], arm_delay: float = 0.0) -> None:
        call = await self._call(request.call_id, request.tool, request.agent)
        if not call.summary:
            call.summary = request.summary
        if call.args is None:
            call.args = request.args
        if request.diff:
            call.diff = request.diff
        asker = self._tasks.label(request.agent)
        call.approval = PendingApproval(request, future, arm_delay, asker)
        self._sync_call(call, request.agent)
        if isinstance(call.view, ToolCallView):
            await call.view.show_approval()

    async def resolve_approval(self, call_id: str, approved: bool, feedback: str = "", agent: tuple[str, ...] = ()) -> None:
        call = self._calls.get((agent, call_id))
        if call is None:
            return
        call.approval = None
        if approved:
            call.note = ""
        else:
            call.note = f"rejected: {feedback}" if feedback else "rejected"
        if isinstance(call.view, ToolCallView):
            await call.view.hide_approval()
        self._sync_call(call, agent)

    async def withdraw_approval(self, call_id: str, agent: tuple[str, ...] = ()) -> None:
        call = self._calls.get((agent, call_id))
        if call is None or call.approval is None:
            return
        call.approval = None
        if isinstance(call.view, ToolCallView):
            await call.view.hide_approval()

    @property
    def pending_approvals(self) -> list[ToolCallEntry]:
        """The turn's open questions, the subagents' included, oldest first."""
        calls = (self._calls[key] for key in self._turn_calls)
        return [call for call in calls if call.approval is not None and not call.approval.future.done()]

    # -- the turn's end ----------------------------------------------------------------------

    async def finish_turn(self, *, interrupted: bool) -> bool:
        """Settle whatever the turn left open: the streaming answers, the subagents still
        running and any unfinished calls.

        Returns True when the interrupt is marked on screen, as the turn's one line about it:
        under the partial answer (which the thread keeps too), or on the calls it cut short."""
        marked = await self._settle_lane(self._main, interrupted=interrupted)
        for call in self._tasks.take_running():
            assert call.task is not None
            await self._settle_lane(call.task, interrupted=interrupted)
            if call.task.started is not None and not call.task.duration_ms:
                call.task.duration_ms = int((time.monotonic() - call.task.started) * 1000)
            call.task.status = ToolStatus.CANCELLED
            call.task.error = call.task.error or ("interrupted" if interrupted else "not finished")
        keys, self._turn_calls = self._turn_calls, []
        for key in keys:
            call = self._calls[key]
            if call.approval is not None:
                await self.withdraw_approval(call.call_id, key[0])
            if call.running:
                call.status = ToolStatus.CANCELLED
                call.preview = call.preview or ("interrupted" if interrupted else "not run")
                marked = marked or interrupted
                self._sync_call(call, key[0])
            elif call.task is not None:
                self._sync_call(call, key[0])  # its subagent settled above
        self._close_step()
        return marked

    def set_expanded(self, expanded: bool) -> None:
        self.expanded = expanded
        for entry in self.entries[self._first :]:
            if isinstance(entry.view, ToolGroupView):
                entry.view.set_expanded(expanded)

    def last_answer(self) -> str:
        for entry in reversed(self.entries):
            if isinstance(entry, AssistantEntry) and entry.text.strip():
                return entry.text
        return ""
