"""The transcript as data: whole events in, the entries they touched out.

A live turn and a resumed session's replay (``dcode.agent.saved_thread.replay``) feed the same
events through :meth:`TranscriptModel.apply`, so a resumed transcript is the one the live turn
drew. The model knows nothing of widgets: the ``Transcript`` view renders what each call
touched (``Touched``), and windows the entries.

Each agent streams into a lane of its own: the session's agent into ``entries``, a subagent into
its task's run (``TaskRun.entries``). Calls are known by (turn, agent path, call id): two agents
may reuse an id, and so may two turns (some servers start again at ``call_1`` each turn).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from dcode.agent.async_tasks.words import read_head
from dcode.agent.compaction_words import compacted_words, refused_words
from dcode.agent.events import (
    ApprovalRequested,
    ApprovalResolved,
    AssistantMessageFinished,
    AsyncTaskStatus,
    BudgetWarning,
    CompactionFinished,
    CompactionRefused,
    CompactionStarted,
    ErrorEvent,
    Event,
    ModelStreamEnded,
    Notice,
    ReasoningDelta,
    ShellCommandRan,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ToolArgsDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolOutputTail,
    ToolProgress,
    ToolStatus,
    UsageUpdated,
    UserMessage,
)
from dcode.terminal_text import safe_prefix, safe_text
from dcode.tui.transcript.entries import (
    START_ASYNC_TASK_TOOL,
    TASK_TOOL,
    AssistantEntry,
    Entry,
    Lane,
    NoticeEntry,
    NoticeLevel,
    PendingApproval,
    RemoteTask,
    ShellEntry,
    TaskRun,
    ToolCallEntry,
    ToolGroupEntry,
    UserEntry,
    VideoSeen,
)

if TYPE_CHECKING:
    from dcode.agent.decisions import ApprovalDecision

ONE_TASK_TOOLS = frozenset(
    {START_ASYNC_TASK_TOOL, "check_async_task", "update_async_task", "cancel_async_task"}
)
"""The async task tools about one task: the first of them a transcript meets for a task (its
start, or a check of a task started in an earlier session) shows the task from then on."""

CallKey = tuple[int, tuple[str, ...], str]
"""A call as the transcript knows it: its turn, the path of the agent that made it, its id."""


class Change(StrEnum):
    """What happened to a touched entry, which says what its widget has to do."""

    ADDED = "added"
    """A new entry at the end of its lane (``Touched.lane``)."""
    CALL_ADDED = "call_added"
    """A call joined a step already shown (``Touched.group``)."""
    TEXT = "text"
    REASONING = "reasoning"
    STREAM_ENDED = "stream_ended"
    """The model sent its last piece: the whole answer can be shown now."""
    SETTLED = "settled"
    """An answer is complete."""
    CHANGED = "changed"
    """Draw it again."""
    STREAMING_ARGS = "streaming_args"
    RUNNING_NEWS = "running_news"
    """A running call's progress or output tail (shown at a bounded rate)."""
    BECAME_TASK = "became_task"
    """A call now runs a subagent: its widget becomes a task's."""
    APPROVAL_SHOWN = "approval_shown"
    APPROVAL_HIDDEN = "approval_hidden"


@dataclass(frozen=True, slots=True)
class Touched:
    change: Change
    entry: Entry | ToolCallEntry
    lane: Lane | None = None
    group: ToolGroupEntry | None = None


class TranscriptModel:
    """Every entry of a conversation, built from its events, and what each event touched."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.turn = 0
        self._main = Lane()
        self._calls: dict[CallKey, ToolCallEntry] = {}
        self._group_of: dict[ToolCallEntry, ToolGroupEntry] = {}
        self._tasks: dict[tuple[str, ...], ToolCallEntry] = {}
        self._running_tasks: list[ToolCallEntry] = []
        self._turn_calls: list[ToolCallEntry] = []
        self._remote_tasks: dict[str, ToolCallEntry] = {}
        """The call that shows each async task, by task id, for every turn: its start, or the
        first call about it when the start is not in this transcript."""

    @classmethod
    def replayed(cls, events: Iterable[Event]) -> TranscriptModel:
        """The model a saved thread's replayed events leave, its last step closed."""
        model = cls()
        for event in events:
            model.apply(event)
        model.close_steps()
        for call in model._tasks.values():
            if call.task is not None:
                call.task.started = None  # a replayed run's time is not saved
        return model

    @classmethod
    def of_entries(cls, entries: Iterable[Entry]) -> TranscriptModel:
        """A model holding ``entries`` as earlier turns (their calls cannot be reached by id)."""
        model = cls()
        model.entries = list(entries)
        model.turn = 1
        return model

    # -- the one way in ---------------------------------------------------------------------

    def apply(self, event: Event) -> list[Touched]:
        """``event`` into the entries; returns what it touched, in order."""
        return list(self._apply(event))

    def _apply(self, event: Event) -> Iterator[Touched]:
        agent = event.agent
        match event:
            case UserMessage(text=text, videos=videos, files=files):
                yield from self.add_user(
                    UserEntry(
                        text=text, videos=[VideoSeen(strip) for strip in videos], files=files
                    ),
                    agent,
                )
            case ShellCommandRan(command=command, output=output, exit_code=code) if not agent:
                yield from self.add_shell(
                    ShellEntry(command=command, output=output, exit_code=code, running=False)
                )
            case TextDelta(text=text):
                yield from self._stream(agent, text, reasoning=False)
            case ReasoningDelta(text=text):
                yield from self._stream(agent, text, reasoning=True)
            case ModelStreamEnded():
                if (lane := self._lane(agent)) is not None and lane.live is not None:
                    yield Touched(Change.STREAM_ENDED, lane.live, lane)
            case AssistantMessageFinished():
                yield from self._finish_message(event)
            case ToolCallStarted(call_id=call_id, name=name):
                yield from self._call(call_id, name, agent)[1]
            case ToolArgsDelta(call_id=call_id, delta=delta) if (
                call := self.call(call_id, agent)
            ) is not None:
                call.args_chars += len(delta)
                yield Touched(Change.STREAMING_ARGS, call)
            case ToolCallRunning():
                yield from self._running(event)
            case ToolProgress(call_id=call_id) if (
                call := self.call(call_id, agent)
            ) is not None and call.running:
                call.progress = event.words
                yield Touched(Change.RUNNING_NEWS, call)
            case ToolOutputTail(call_id=call_id, tail=tail, lines=lines) if (
                call := self.call(call_id, agent)
            ) is not None and call.running:
                call.tail, call.tail_lines = tail, lines
                yield Touched(Change.RUNNING_NEWS, call)
            case ToolCallFinished():
                yield from self._finished(event)
            case ApprovalResolved(call_id=call_id, approved=approved, feedback=feedback):
                yield from self.resolve_approval(call_id, approved, feedback, agent)
            case SubagentStarted():
                yield from self._subagent_started(event)
            case SubagentFinished():
                yield from self._subagent_finished(event)
            case AsyncTaskStatus():
                yield from self._remote_status(event)
            case UsageUpdated() if agent:
                yield from self._subagent_usage(event)
            case Notice(message=message):
                yield from self.notice(message, agent=agent)
            case CompactionStarted(reason=reason):
                yield from self.notice(f"compacting the conversation ({reason})…", agent=agent)
            case CompactionFinished(archive_path=archive):
                yield from self.notice(
                    compacted_words(event, with_archive=archive is None), path=archive, agent=agent
                )
            case CompactionRefused():
                yield from self.notice(
                    f"not compacted: {refused_words(event)}", NoticeLevel.WARNING, agent=agent
                )
            case ErrorEvent(message=message):
                yield from self.notice(message, NoticeLevel.ERROR, agent=agent)
            case BudgetWarning(message=message):  # the session's, whichever agent crossed it
                yield from self.notice(message, NoticeLevel.WARNING)

    # -- what the user adds ------------------------------------------------------------------

    def add_user(self, entry: UserEntry, agent: tuple[str, ...] = ()) -> Iterator[Touched]:
        """A prompt: a new turn begins. (A subagent's user message, which only a replay
        meets, stays in its task's run.)"""
        if agent:
            if (lane := self._lane(agent)) is not None:
                lane.live = None
                yield from self._close_group(lane)
                yield self._add(lane, entry)
            return
        self._new_turn()
        yield self._add(self._main, entry)

    def add_shell(self, entry: ShellEntry) -> Iterator[Touched]:
        """A ``!cmd``: a turn of its own."""
        self._new_turn()
        yield self._add(self._main, entry)

    def notice(
        self,
        text: str,
        level: NoticeLevel = NoticeLevel.INFO,
        *,
        path: str | None = None,
        agent: tuple[str, ...] = (),
    ) -> Iterator[Touched]:
        lane = self._lane(agent) or self._main
        if lane is not self._main:
            yield from self._close_group(lane)
        yield self._add(lane, NoticeEntry(text=text, level=level, path=path))

    def _new_turn(self) -> None:
        self.close_steps()
        self.turn += 1
        self._turn_calls = []

    # -- lanes and answers -------------------------------------------------------------------

    def _lane(self, agent: tuple[str, ...]) -> Lane | None:
        if not agent:
            return self._main
        call = self._tasks.get(agent)
        return call.task if call is not None else None

    def _add(self, lane: Lane, entry: Entry) -> Touched:
        (lane.entries if isinstance(lane, TaskRun) else self.entries).append(entry)
        return Touched(Change.ADDED, entry, lane)

    def _live_entry(self, lane: Lane) -> Iterator[Touched]:
        if lane.live is None:
            yield from self._close_group(lane)
            lane.live = AssistantEntry(streaming=True)
            yield self._add(lane, lane.live)

    def _stream(self, agent: tuple[str, ...], text: str, *, reasoning: bool) -> Iterator[Touched]:
        if (lane := self._lane(agent)) is None:
            return
        yield from self._live_entry(lane)
        entry = lane.live
        assert entry is not None
        if reasoning:
            shown, entry.held_reasoning = safe_prefix(entry.held_reasoning + text)
            entry.reasoning += shown
        else:
            shown, entry.held = safe_prefix(entry.held + text)
            entry.text += shown
        if shown:
            yield Touched(Change.REASONING if reasoning else Change.TEXT, entry, lane)

    def _finish_message(self, event: AssistantMessageFinished) -> Iterator[Touched]:
        """One model response is complete: settle its text; its tool calls form one step."""
        if (lane := self._lane(event.agent)) is None:
            return
        entry, lane.live = lane.live, None
        if entry is None and (event.text.strip() or event.reasoning.strip()):
            shown = AssistantEntry(
                text=safe_text(event.text),
                reasoning=safe_text(event.reasoning),
                interrupted=event.interrupted,
            )
            yield self._add(lane, shown)
        elif entry is not None:
            _settle(entry, event.text)
            yield Touched(Change.SETTLED, entry, lane)
        yield from self._close_group(lane)

    def _close_group(self, lane: Lane) -> Iterator[Touched]:
        if lane.open_group is not None:
            group, lane.open_group = lane.open_group, None
            group.open = False
            yield Touched(Change.CHANGED, group)

    def close_steps(self) -> None:
        """Close the session's open step and forget its live answer (a new turn begins)."""
        self._main.live = None
        if self._main.open_group is not None:
            self._main.open_group.open = False
            self._main.open_group = None

    # -- calls --------------------------------------------------------------------------------

    def call(self, call_id: str, agent: tuple[str, ...] = ()) -> ToolCallEntry | None:
        """The current turn's call ``call_id`` by the agent at ``agent``."""
        return self._calls.get((self.turn, agent, call_id))

    def group_of(self, call: ToolCallEntry) -> ToolGroupEntry | None:
        return self._group_of.get(call)

    def _call(
        self, call_id: str, name: str, agent: tuple[str, ...]
    ) -> tuple[ToolCallEntry, list[Touched]]:
        """The call, made (in the lane's open step, or a new one) when it is new."""
        key = (self.turn, agent, call_id)
        call = self._calls.get(key)
        if call is not None:
            if name and not call.name:
                call.name = name
            return call, []
        call = ToolCallEntry(call_id=call_id, name=name)
        self._calls[key] = call
        self._turn_calls.append(call)
        # A subagent not known yet (its start still on its way) cannot lose a call: the
        # session's lane takes it.
        lane = self._lane(agent) or self._main
        group = lane.open_group
        self._group_of[call] = group or ToolGroupEntry()
        if group is None:
            group = lane.open_group = self._group_of[call]
            group.calls.append(call)
            return call, [self._add(lane, group)]
        group.calls.append(call)
        return call, [Touched(Change.CALL_ADDED, call, lane, group)]

    def _running(self, event: ToolCallRunning) -> Iterator[Touched]:
        call, made = self._call(event.call_id, event.name, event.agent)
        yield from made
        call.name = event.name or call.name
        call.args = event.args
        call.summary = event.summary
        yield Touched(
            Change.BECAME_TASK if call.is_task else Change.CHANGED,
            call,
            group=self._group_of.get(call),
        )

    def _finished(self, event: ToolCallFinished) -> Iterator[Touched]:
        call = self.call(event.call_id, event.agent)
        if call is None:
            return
        result = event.result
        call.frames = VideoSeen(result.frames) if result.frames is not None else None
        call.status = result.status
        call.preview = result.preview
        call.output = result.text
        call.diff = result.diff  # what the write did (the approval's preview was what it would do)
        call.saved_to = result.saved_to
        if not call.name:
            call.name = event.name
        if call.name == START_ASYNC_TASK_TOOL and call.remote is None:
            yield from self._started_remote(call, result.text)
        yield Touched(Change.CHANGED, call, group=self._group_of.get(call))

    # -- subagents ---------------------------------------------------------------------------

    def _subagent_started(self, event: SubagentStarted) -> Iterator[Touched]:
        """A ``task`` call's subagent has begun: the call holds its run."""
        call, made = self._call(event.call_id, TASK_TOOL, event.agent[:-1])
        yield from made
        call.task = TaskRun(
            path=event.agent,
            agent_type=event.agent_type,
            description=event.description,
            thread_id=event.thread_id,
            started=time.monotonic(),
        )
        self._tasks[event.agent] = call
        self._running_tasks.append(call)
        yield Touched(Change.BECAME_TASK, call, group=self._group_of.get(call))

    def _subagent_usage(self, event: UsageUpdated) -> Iterator[Touched]:
        """A subagent's model response: its tokens count for it and for the tasks above it."""
        for depth in range(1, len(event.agent) + 1):
            call = self._tasks.get(event.agent[:depth])
            if call is not None and call.task is not None:
                call.task.input_tokens += event.input_tokens
                call.task.output_tokens += event.output_tokens
                yield Touched(Change.CHANGED, call, group=self._group_of.get(call))

    def _subagent_finished(self, event: SubagentFinished) -> Iterator[Touched]:
        call = self._tasks.get(event.agent)
        if call is None or call.task is None:
            return
        run = call.task
        run.status, run.result, run.error = event.status, event.result, event.error
        run.input_tokens, run.output_tokens = event.input_tokens, event.output_tokens
        run.num_turns, run.duration_ms = event.num_turns, event.duration_ms
        yield from self._settle_lane(run, interrupted=event.status is ToolStatus.CANCELLED)
        yield Touched(Change.CHANGED, call, group=self._group_of.get(call))

    def _settle_lane(self, lane: Lane, *, interrupted: bool) -> Iterator[Touched]:
        """End what ``lane`` was writing; an interrupt marks a partial answer it cut short."""
        live, lane.live = lane.live, None
        if live is not None:
            _settle(live, interrupted=interrupted and bool(live.text.strip()))
            yield Touched(Change.SETTLED, live, lane)
        yield from self._close_group(lane)

    # -- async tasks --------------------------------------------------------------------------

    def _remote_status(self, event: AsyncTaskStatus) -> Iterator[Touched]:
        """An async task's status: the call that started it shows it, whichever call (or the
        poller) told it; a task no call of this transcript started is not shown."""
        call = self._remote_tasks.get(event.task_id)
        if call is not None:
            yield from self._show_remote(call, event)
            return
        call = self.call(event.call_id, event.agent) if event.call_id else None
        if call is not None and call.name in ONE_TASK_TOOLS:
            yield from self._show_remote(call, event)

    def _started_remote(self, call: ToolCallEntry, text: str) -> Iterator[Touched]:
        """A start whose status event did not come (a replayed session's): the task as its
        result says it was then."""
        head = read_head(text) if call.status is ToolStatus.OK else None
        if head is None or head[0] in self._remote_tasks:
            return
        task_id, agent_name, status = head
        description = str((call.args or {}).get("description") or "")
        event = AsyncTaskStatus(task_id, agent_name, status, description, call_id=call.call_id)
        yield from self._show_remote(call, event)

    def _show_remote(self, call: ToolCallEntry, event: AsyncTaskStatus) -> Iterator[Touched]:
        change = Change.CHANGED
        if call.remote is None:  # the first the transcript hears of it: the call becomes it
            self._remote_tasks[event.task_id] = call
            call.remote = RemoteTask(
                task_id=event.task_id,
                agent_name=event.agent_name,
                description=event.description,
                started=_epoch(event.created_at),
            )
            change = Change.BECAME_TASK
        remote = call.remote
        remote.status, remote.error = event.status, event.error
        remote.description = event.description or remote.description
        if remote.started is None:  # a replayed start's time, from its record
            remote.started = _epoch(event.created_at)
        if remote.live:
            remote.ended = None
        elif remote.ended is None:
            remote.ended = time.time()
        yield Touched(change, call, group=self._group_of.get(call))

    @property
    def running_remote_tasks(self) -> int:
        """The async tasks running as last seen (whose servers answered)."""
        return sum(
            1
            for call in self._remote_tasks.values()
            if call.remote is not None and call.remote.live and not call.remote.error
        )

    def task_call(self, agent: tuple[str, ...]) -> ToolCallEntry | None:
        """The ``task`` call whose subagent is the agent at ``agent``."""
        return self._tasks.get(agent)

    def task_label(self, agent: tuple[str, ...]) -> str:
        """How the agent at ``agent`` is named where it asks: ``""`` for the session's own."""
        if not agent:
            return ""
        call = self._tasks.get(agent)
        return call.task.label if call is not None and call.task is not None else "/".join(agent)

    # -- approvals ---------------------------------------------------------------------------

    def show_approval(
        self,
        request: ApprovalRequested,
        future: asyncio.Future[ApprovalDecision],
        arm_delay: float = 0.0,
    ) -> Iterator[Touched]:
        call, made = self._call(request.call_id, request.tool, request.agent)
        yield from made
        call.summary = call.summary or request.summary
        if call.args is None:
            call.args = request.args
        if request.diff:
            call.diff = request.diff
        call.approval = PendingApproval(request, future, arm_delay, self.task_label(request.agent))
        yield Touched(Change.CHANGED, call, group=self._group_of.get(call))
        yield Touched(Change.APPROVAL_SHOWN, call, group=self._group_of.get(call))

    def resolve_approval(
        self, call_id: str, approved: bool, feedback: str = "", agent: tuple[str, ...] = ()
    ) -> Iterator[Touched]:
        call = self.call(call_id, agent)
        if call is None:
            return
        call.approval = None
        call.note = "" if approved else (f"rejected: {feedback}" if feedback else "rejected")
        yield Touched(Change.APPROVAL_HIDDEN, call, group=self._group_of.get(call))
        yield Touched(Change.CHANGED, call, group=self._group_of.get(call))

    def withdraw_approval(self, call: ToolCallEntry) -> Iterator[Touched]:
        if call.approval is not None:
            call.approval = None
            yield Touched(Change.APPROVAL_HIDDEN, call, group=self._group_of.get(call))

    @property
    def pending_approvals(self) -> list[ToolCallEntry]:
        """The turn's open questions, the subagents' included, oldest first."""
        return [
            call
            for call in self._turn_calls
            if call.approval is not None and not call.approval.future.done()
        ]

    # -- the turn's end ----------------------------------------------------------------------

    def finish_turn(self, *, interrupted: bool) -> tuple[list[Touched], bool]:
        """Settle whatever the turn left open: the streaming answers, the subagents still
        running and any unfinished calls. Also True when the interrupt is marked in the
        entries, as the turn's one line about it: under the partial answer, or on the calls it
        cut short."""
        touched = list(self._settle_lane(self._main, interrupted=interrupted))
        marked = any(
            item.change is Change.SETTLED
            and isinstance(item.entry, AssistantEntry)
            and item.entry.interrupted
            for item in touched
        )
        running, self._running_tasks = self._running_tasks, []
        for call in running:
            if call.task is None or not call.task.running:
                continue
            touched += self._settle_lane(call.task, interrupted=interrupted)
            if call.task.started is not None and not call.task.duration_ms:
                call.task.duration_ms = int((time.monotonic() - call.task.started) * 1000)
            call.task.status = ToolStatus.CANCELLED
            call.task.error = call.task.error or ("interrupted" if interrupted else "not finished")
        calls, self._turn_calls = self._turn_calls, []
        for call in calls:
            touched += self.withdraw_approval(call)
            if call.running:
                call.status = ToolStatus.CANCELLED
                call.preview = call.preview or ("interrupted" if interrupted else "not run")
                marked = marked or interrupted
            if call.running or call.status is ToolStatus.CANCELLED or call.task is not None:
                touched.append(Touched(Change.CHANGED, call, group=self._group_of.get(call)))
        self.close_steps()
        return touched, marked

    def last_answer(self) -> str:
        for entry in reversed(self.entries):
            if isinstance(entry, AssistantEntry) and entry.text.strip():
                return entry.text
        return ""


def _epoch(stamp: str) -> float | None:
    """``2026-01-31T12:00:00Z`` as ``time.time`` counts; None when it is not such a time."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _settle(entry: AssistantEntry, text: str = "", *, interrupted: bool = False) -> None:
    entry.streaming = False
    entry.interrupted = interrupted
    # The whole text, when the model's step gives it; else what streamed, with its end.
    entry.text = safe_text(text) if text else entry.text + safe_text(entry.held)
    entry.reasoning += safe_text(entry.held_reasoning)
    entry.held = entry.held_reasoning = ""
