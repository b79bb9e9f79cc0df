"""The conversation view: entries (data), their widgets, and the windowed scroller."""

from dcode.tui.transcript.entries import (
    AssistantEntry,
    Entry,
    NoticeEntry,
    NoticeLevel,
    ShellEntry,
    ToolCallEntry,
    ToolGroupEntry,
    UserEntry,
)
from dcode.tui.transcript.view import Transcript

__all__ = [
    "AssistantEntry",
    "Entry",
    "NoticeEntry",
    "NoticeLevel",
    "ShellEntry",
    "ToolCallEntry",
    "ToolGroupEntry",
    "Transcript",
    "UserEntry",
]
