"""A plan put to the user (``exit_plan_mode``): its Markdown, the question while it waits, and
the answer once given.

The plan is drawn from the call's arguments and the answer from the call's result, so a resumed
session (whose transcript is rebuilt from the saved messages) shows a plan exactly as it was
shown live, answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from dcode.terminal_text import safe_text
from dcode.tui.transcript.answer import AnswerDocument
from dcode.tui.transcript.tools import PREVIEW_LINES, SavedOutputLine, ToolCallView, _clip

if TYPE_CHECKING:
    from dcode.tui.approval_widget import ApprovalWidget


class PlanCallView(ToolCallView):
    DEFAULT_CSS = """
    PlanCallView > .plan-text {
        margin: 0 0 0 2;
        padding: 0 1;
        border-left: outer $accent;
        height: auto;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(classes="tool-head")
        yield AnswerDocument(self.plan, classes="plan-text")
        yield Static(classes="tool-tail")
        yield Static(classes="tool-body")
        yield SavedOutputLine(classes="tool-saved")
        yield Static(classes="tool-note")

    @property
    def plan(self) -> str:
        plan = (self.entry.args or {}).get("plan")
        return safe_text(plan) if isinstance(plan, str) else ""

    def sync(self) -> None:
        super().sync()
        document = self.query_one(".plan-text", AnswerDocument)
        if (plan := self.plan) != document.given:  # the arguments came after the call's start
            document.given = plan
            document.update(plan)
        document.display = bool(plan)
        self.query_one(".tool-note", Static).display = False  # the answer line says it

    def _body(self) -> Content:
        """The answer, as the model was told it (the call's result): the same live and resumed."""
        if self.entry.running:
            return Content("")
        text, _ = _clip(safe_text(self.entry.preview or self.entry.output), PREVIEW_LINES)
        return Content("└ ") + Content(text.replace("\n", "\n  ")) if text else Content("")

    def question(self) -> ApprovalWidget:
        from dcode.tui.plan_widget import PlanQuestion

        pending = self.entry.approval
        assert pending is not None
        return PlanQuestion(
            pending.request, pending.future, arm_delay=pending.arm_delay, asker=pending.asker
        )
