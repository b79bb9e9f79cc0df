"""Approvals of a served run: each question is a LangGraph ``interrupt()``.

The run stops at the call that asks; the client sees the interrupt (its value is the
``ApprovalRequested`` event as JSON) and answers it with ``Command(resume=...)``: ``true`` or
``false``, or an object with the fields of ``ApprovalDecision`` (``approved``, ``feedback``,
``remember``, ``whole_server``, ``mode``, ``end_turn``). On resume the tool node runs the call
again and ``interrupt()`` returns the answer at once.

A subagent's question stops the subagent's own run the same way; its ``task`` call asks it again
in the session's run (``dcode.agent.subagents.runs``), so the client answers it as any other,
the question naming the subagent (``agent``). A rule to save is not written into the server's
config.
"""

from __future__ import annotations

from collections.abc import Mapping

from dcode.agent.decisions import ApprovalDecision
from dcode.agent.events import ApprovalRequested
from dcode.settings.config import ApprovalMode


def decision_of(answer: object) -> ApprovalDecision:
    """The decision a client's resume value stands for; anything else is a denial saying why."""
    if isinstance(answer, bool):
        return ApprovalDecision(answer)
    if not isinstance(answer, Mapping) or not isinstance(answer.get("approved"), bool):
        return ApprovalDecision(
            False, f"the answer to the approval was not understood: {answer!r:.200}"
        )
    mode = answer.get("mode")
    try:
        chosen = ApprovalMode(mode) if mode else None
    except ValueError:
        return ApprovalDecision(False, f"the answer named no approval mode: {mode!r:.50}")
    return ApprovalDecision(
        answer["approved"],
        feedback=str(answer.get("feedback") or ""),
        remember=bool(answer.get("remember")),
        whole_server=bool(answer.get("whole_server")),
        mode=chosen,
        end_turn=bool(answer.get("end_turn")),
    )


class InterruptApprover:
    """Asks the run's client through ``interrupt()``, whose value is the question as JSON."""

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        from langgraph.types import interrupt

        return decision_of(interrupt(request.to_json()))
