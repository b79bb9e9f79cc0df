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
from typing import TYPE_CHECKING, Any

from dcode.agent.events import ApprovalRequested, ToolStatus
from dcode.media.frames import FrameStrip

if TYPE_CHECKING:
    from textual.widget import Widget

    from dcode.agent.approval import ApprovalDecision


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


@dataclass(eq=False)
class AssistantEntry(Entry):
    text: str = ""
    reasoning: str = ""
    streaming: bool = False
    interrupted: bool = False


@dataclass(eq=False)
class PendingApproval:
    request: ApprovalRequested
    future: asyncio.Future[ApprovalDecision]
    arm_delay: float = 0.0


@dataclass(eq=False)
class ToolCallEntry:
    call_id: str
    name: str
    summary: str = ""
    args: dict[str, Any] | None = None
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
    frames: VideoSeen | None = None
    """The frames of a video read, shown as a line and a contact sheet."""
    approval: PendingApproval | None = None
    view: Widget | None = field(default=None, init=False, repr=False)

    @property
    def running(self) -> bool:
        return self.status is None

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
