"""The question a plan asks, answered with one key (the plan itself is drawn above it by
``PlanCallView``).

``e`` approves and goes on in ``edits``; ``m`` approves and goes on in ``manual``; Tab opens a
line for what should change, and the model keeps planning with it; ``n`` rejects the plan and
ends the turn; Esc stops the turn, as at any question. The answers' words for the model are the
core's (``dcode.agent.plan_mode``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import Input, Static

from dcode.agent import plan_mode
from dcode.agent.approval import ApprovalDecision
from dcode.settings.config import ApprovalMode
from dcode.tui.approval_widget import ApprovalWidget

if TYPE_CHECKING:
    import asyncio

    from dcode.agent.events import ApprovalRequested

QUESTION = "Approve this plan?"


class PlanQuestion(ApprovalWidget, inherit_bindings=False):
    DEFAULT_CSS = """
    PlanQuestion {
        border: round $accent;
        border-title-color: $text-accent;
        background: $accent-muted 20%;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "approve_edits", "Approve, then edits", show=False),
        Binding("m", "approve_manual", "Approve, then manual", show=False),
        Binding("tab", "feedback", "Keep planning, with feedback", show=False, priority=True),
        Binding("n", "reject", "Reject", show=False),
        Binding("escape", "stop", "Stop", show=False),
    ]

    def __init__(
        self,
        request: ApprovalRequested,
        future: asyncio.Future[ApprovalDecision],
        *,
        arm_delay: float = 0.0,
        asker: str = "",
    ) -> None:
        super().__init__(request, future, arm_delay=arm_delay, asker=asker)
        self.border_title = Content(QUESTION)

    def compose(self) -> ComposeResult:
        yes, no = "bold $text-success", "bold $text-error"
        keys = Content.assemble(
            ("e", yes), " approve, then edits (changes in the workspace run)   ",
            ("m", yes), " approve, then manual (each change asks)   ",
            ("tab", "bold $text-warning"), " keep planning, with feedback   ",
            ("n", no), " reject",
        )  # fmt: skip
        yield Static(keys, classes="approval-keys")
        yield Input(placeholder="What should change in the plan? Enter sends it (Esc to go back)")

    def action_approve_edits(self) -> None:
        if self._armed():
            self.decide(plan_mode.approve(ApprovalMode.EDITS))

    def action_approve_manual(self) -> None:
        if self._armed():
            self.decide(plan_mode.approve(ApprovalMode.MANUAL))

    def action_reject(self) -> None:
        if self._armed():
            self.decide(plan_mode.reject())

    def with_feedback(self, feedback: str) -> ApprovalDecision:
        return plan_mode.revise(feedback)
