"""The widget for an entry or a call: the transcript's and a subagent's nested view build
them alike. The one place that knows every kind of widget: the widgets themselves are given
this module's builders, and never import it."""

from __future__ import annotations

from textual.widget import Widget

from dcode.tui.transcript.blocks import NoticeMessage, ShellOutput, UserMessage
from dcode.tui.transcript.entries import (
    AssistantEntry,
    Entry,
    NoticeEntry,
    ShellEntry,
    ToolCallEntry,
    ToolGroupEntry,
    UserEntry,
)
from dcode.tui.transcript.tools import ToolCallView, ToolGroupView


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
            widget = ToolGroupView(entry, call_view, expanded=expanded, animate=animate)
        case NoticeEntry():
            widget = NoticeMessage(entry)
        case ShellEntry():
            widget = ShellOutput(entry)
        case _:
            raise TypeError(f"no widget for {type(entry).__name__}")
    entry.view = widget
    return widget


def call_view(call: ToolCallEntry, expanded: bool, animate: bool) -> Widget:
    """The widget for one call: a ``task`` call's is the subagent's (``TaskView``), an async
    task's start is the task's (``RemoteTaskView``), a plan's shows the plan (``PlanCallView``)."""
    from dcode.agent.tools.spec import (
        EXIT_PLAN_MODE,  # with pydantic: not before the first call is drawn
    )

    if call.name == EXIT_PLAN_MODE.name:
        from dcode.tui.transcript.plan_view import PlanCallView

        return PlanCallView(call, expanded=expanded, animate=animate)
    if call.is_async_task:
        from dcode.tui.transcript.remote_task_view import RemoteTaskView

        return RemoteTaskView(call, expanded=expanded, animate=animate)
    if call.is_task:
        from dcode.tui.transcript.task_view import TaskView

        return TaskView(call, entry_widget, expanded=expanded, animate=animate)
    return ToolCallView(call, expanded=expanded, animate=animate)
