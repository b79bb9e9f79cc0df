"""The widget for an entry: the transcript's and a subagent's nested view build them alike."""

from __future__ import annotations

from textual.widget import Widget

from dcode.tui.transcript.blocks import NoticeMessage, ShellOutput, UserMessage
from dcode.tui.transcript.entries import AssistantEntry, Entry, NoticeEntry, ShellEntry, ToolGroupEntry, UserEntry
from dcode.tui.transcript.tools import ToolGroupView


def entry_widget(entry: Entry, *, expanded: bool, animate: bool, nested: bool = False) -> Widget:
    """A new widget for ``entry``, which becomes its ``view``. Answers need the answer module
    (and Markdown), which the first frame does without: it is imported here, when one is built.
    ``nested``: in a task's view, where a subagent's answer is drawn as plain text."""
    match entry:
        case UserEntry():
            widget: Widget = UserMessage(entry)
        case AssistantEntry() if nested:
            from dcode.tui.transcript.nested_answer import NestedAnswer

            widget = NestedAnswer(entry, full=expanded)
        case AssistantEntry():
            from dcode.tui.transcript.answer import AssistantMessage

            widget = AssistantMessage(entry)
        case ToolGroupEntry():
            widget = ToolGroupView(entry, expanded=expanded, animate=animate)
        case NoticeEntry():
            widget = NoticeMessage(entry)
        case ShellEntry():
            widget = ShellOutput(entry)
        case _:
            raise TypeError(f"no widget for {type(entry).__name__}")
    entry.view = widget
    return widget
