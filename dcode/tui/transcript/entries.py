"""The transcript's data, kept apart from its widgets.

Every item of the conversation is an ``Entry``. Only a window of entries has a mounted widget
(``entry.view``); the rest are plain data, so a 1,000-message session costs a list of small
objects rather than a thousand widget trees. A widget is always (re)built from its entry, so an
entry can be unmounted and mounted again without losing anything.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from dcode.agent.events import ApprovalRequested, ToolStatus
from dcode.media.frames import FrameStrip

if TYPE_CHECKING:
    from textual.widget import Widget

    from dcode.agent.approval import ApprovalDecision


TASK_TOOL = "task"
"""The name of the core's ``task`` tool (``dcode.agent.tools.spec.TASK``, which the first frame
does without importing)."""
START_ASYNC_TASK_TOOL = "start_async_task"
"""The tool that starts an async task (``dcode.agent.tools.spec.START_ASYNC_TASK``)."""


class NoticeLevel(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(eq=False)
class Entry:
    view: Widget | None = field(default=None, init=False, repr=False)
    """The mounted widget for this entry, or None while it is outside the window."""


@dataclass(eq=False)
class VideoSeen:
    """A sampled video window in the transcript, and what its frames weigh on the model's
    route once that is known (measured off the UI thread)."""

    strip: FrameStrip
    sent_bytes: int | None = None


@dataclass(eq=False)
class UserEntry(Entry):
    text: str = ""
    videos: list[VideoSeen] = field(default_factory=list)
    files: tuple[str, ...] = ()
    """A line for each file attached with ``@path`` (``main.py (120 lines)``)."""


@dataclass(eq=False)
class AssistantEntry(Entry):
    """An answer. Unlike the other entries, which keep what the core sent and are made safe
    where they are drawn, ``text`` and ``reasoning`` hold the answer as it is shown
    (``dcode.terminal_text.safe_text``): they stream into a Markdown document piece by piece,
    and an escape sequence may arrive split across two pieces. ``held`` and
    ``held_reasoning`` are the raw ends not shown yet, which may be such a start."""

    text: str = ""
    reasoning: str = ""
    streaming: bool = False
    interrupted: bool = False
    held: str = ""
    held_reasoning: str = ""


@dataclass(eq=False)
class PendingApproval:
    request: ApprovalRequested
    future: asyncio.Future[ApprovalDecision]
    arm_delay: float = 0.0
    asker: str = ""
    """The subagent that asks ("task:1 · general-purpose"); ``""`` for the session's own agent."""


@dataclass(eq=False)
class ToolCallEntry:
    call_id: str
    name: str
    summary: str = ""
    args: dict[str, object] | None = None
    args_chars: int = 0
    status: ToolStatus | None = None
    preview: str = ""
    output: str = ""
    diff: str = ""
    """The approval's proposed diff while it waits, then the diff the finished call recorded."""
    saved_to: str = ""
    """The file with the call's full output, when it was too large for the model."""
    note: str = ""
    """How an approval went ("approved", "rejected: …"), shown under the call."""
    progress: str = ""
    """What a running call last said of its progress ("40% · indexing"), on its line."""
    tail: str = ""
    """The last lines a running call has printed (a shell command's output), under its line."""
    tail_lines: int = 0
    """How many lines it has printed so far."""
    frames: VideoSeen | None = None
    """The frames of a video read, shown as a line and a contact sheet."""
    approval: PendingApproval | None = None
    task: TaskRun | None = None
    """The subagent a ``task`` call started, once it has."""
    remote: RemoteTask | None = None
    """The async task a ``start_async_task`` call started, once it has."""
    view: Widget | None = field(default=None, init=False, repr=False)

    @property
    def running(self) -> bool:
        return self.status is None

    @property
    def is_task(self) -> bool:
        return self.name == TASK_TOOL or self.task is not None

    @property
    def is_async_task(self) -> bool:
        """It shows an async task: drawn as a call (its approval asked in it) until the task
        exists, then as the task's widget."""
        return self.remote is not None

    @property
    def failed(self) -> bool:
        return self.status is ToolStatus.ERROR


@dataclass(eq=False)
class ToolGroupEntry(Entry):
    """The tool calls of one model response ("one step")."""

    calls: list[ToolCallEntry] = field(default_factory=list)
    open: bool = True
    """True while the model may still add calls to this step."""

    @property
    def running(self) -> bool:
        return any(call.running for call in self.calls)


@dataclass(eq=False)
class Lane:
    """Where one agent's stream goes in the transcript: the answer it is writing and the step
    (tool group) it may still add calls to."""

    live: AssistantEntry | None = None
    open_group: ToolGroupEntry | None = None


@dataclass(eq=False)
class TaskRun(Lane):
    """A ``task`` call's subagent: who it is, what it did (``entries``: its answers, tool steps
    and notices, a small transcript of its own) and how it ended."""

    path: tuple[str, ...] = ()
    """Its agent path, ``("task:2",)``, as its events carry it."""
    agent_type: str = ""
    description: str = ""
    thread_id: str = ""
    entries: list[Entry] = field(default_factory=list)
    started: float | None = None
    """When it started (``time.monotonic``); None for a replayed run, whose time is not saved."""
    status: ToolStatus | None = None
    result: str = ""
    error: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    num_turns: int = 0
    duration_ms: int = 0

    @property
    def running(self) -> bool:
        return self.status is None

    @property
    def label(self) -> str:
        """How an approval names it: ``task:1 · general-purpose``."""
        return (
            f"{'/'.join(self.path)} · {self.agent_type}" if self.agent_type else "/".join(self.path)
        )


@dataclass(eq=False)
class RemoteTask:
    """An async task (``AsyncTaskStatus``): where it runs, what it does, and its remote run's
    status as last seen, by a tool call or the session's poller."""

    task_id: str
    agent_name: str
    description: str = ""
    status: str = "pending"
    error: str = ""
    """Why its server could not be asked, the last time it was (one line); "" when it could."""
    started: float | None = None
    """When it was started (``time.time``); None when that is not known."""
    ended: float | None = None
    """When it was first seen in a final state (``time.time``)."""

    @property
    def live(self) -> bool:
        return self.status in ("pending", "running")


@dataclass(eq=False)
class NoticeEntry(Entry):
    text: str = ""
    level: NoticeLevel = NoticeLevel.INFO
    path: str | None = None
    """A file the notice names (an archive): shown after the text, opened by a click."""


@dataclass(eq=False)
class ShellEntry(Entry):
    """A ``!cmd`` the user ran; ``private`` ones (``!!cmd``) never reach the model."""

    command: str = ""
    output: str = ""
    exit_code: int | None = None
    private: bool = False
    running: bool = True
    tail: str = ""
    """While it runs: the last lines it has printed."""
