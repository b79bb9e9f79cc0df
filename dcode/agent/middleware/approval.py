"""Human-in-the-loop approvals as a ``wrap_tool_call`` middleware.

Hook: ``awrap_tool_call``. It asks the run's ``ApprovalPolicy`` whether the call may run; if not,
it emits ``ApprovalRequested`` (with a diff for edits) and awaits the run's ``Approver``. A
denial becomes an error ``ToolMessage`` the model can read and act on, so nothing ever hangs
waiting for a person who is not there. A call the policy refuses outright (a ``deny`` rule,
plan mode) is not asked about either: the model reads why, and the denial is kept for
``/permissions`` and headless results. A call of a tool the graph does not have (a name the
model made up) is not asked about: nothing would run, and the tool node tells the model so. An answer can switch
the mode before the call runs (a plan approved), or end the turn with the denial
(``END_TURN_MARKER``, which ``PlanModeMiddleware`` acts on). A ``PreToolUse`` hook's
``permissionDecision`` joins the policy's verdict first (``dcode.agent.hooks.decision``), and an
approval that waits fires the ``Notification`` hooks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, AgentState, ToolCallRequest
from langchain_core.messages import ToolCall, ToolMessage
from langgraph.types import Command

from dcode.agent.approval import ApprovalDecision, Denial, Verdict, remember
from dcode.agent.events import ApprovalKind, ApprovalRequested, ApprovalResolved, Notice
from dcode.agent.hooks.decision import hook_decision, hook_verdict
from dcode.agent.markers import END_TURN_MARKER
from dcode.agent.middleware.run_context_required import require_run_context
from dcode.agent.permissions.hide import hide_denied_matches
from dcode.agent.permissions.load import keep_rule
from dcode.agent.permissions.suggest import suggest_rule
from dcode.agent.run_context import RunContext, current_thread_id
from dcode.agent.tools.diffs import proposed_diff
from dcode.agent.tools.result import ToolResult, ToolStatus
from dcode.agent.tools.result_message import message_fields
from dcode.agent.tools.spec import GREP
from dcode.agent.tools.summary import summarize_call


def denied_message(call: ToolCall, text: str, *, end_turn: bool = False) -> ToolMessage:
    fields = message_fields(ToolResult(f"denied: {text}", status=ToolStatus.DENIED))
    if end_turn:
        fields["additional_kwargs"][END_TURN_MARKER] = True
    return ToolMessage(**fields, tool_call_id=call["id"], name=call["name"])


def denial_reason(verdict: Verdict, decision: ApprovalDecision) -> str:
    """What the model reads when the user says no: a plan's answer is worded where it is made
    (``plan_mode``); otherwise the user's words, or the policy's reason headless gives back."""
    if verdict.kind is ApprovalKind.PLAN and decision.feedback:
        return decision.feedback
    reason = decision.feedback or "the user rejected this call"
    if decision.feedback and not decision.feedback.startswith(verdict.reason):
        reason = f"the user rejected this call and said: {decision.feedback}"
    return reason


def refuse(context: RunContext, call: ToolCall, reason: str) -> ToolMessage:
    """The call does not run: the model is told why, and the denial is kept."""
    context.policy.denials.append(
        Denial(call["name"], call["id"] or "", dict(call.get("args") or {}), reason)
    )
    return denied_message(call, reason)


async def _keep(context: RunContext, decision: ApprovalDecision) -> None:
    """Save the rule the user chose; a failure is a notice, and the call still runs (it was approved)."""
    assert context.policy.rules is not None
    try:
        rule = await asyncio.to_thread(
            keep_rule, context.policy.rules, decision.save_rule, everywhere=decision.everywhere
        )
    except (OSError, ValueError) as exc:
        context.emit(Notice(f"could not save the rule {decision.save_rule}: {exc}"))
        return
    context.emit(Notice(f"allowed from now on: {rule.text} (saved in {rule.source.label})"))


async def _run(
    context: RunContext,
    request: ToolCallRequest,
    handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[object]]],
) -> ToolMessage | Command[object]:
    """The call, and for a search, its result without the lines of files a deny rule guards."""
    result = await handler(request)
    rules = context.policy.rules
    if (
        rules is None
        or request.tool_call["name"] != GREP.name
        or not isinstance(result, ToolMessage)
        or not isinstance(result.content, str)
    ):
        return result
    result.content = hide_denied_matches(
        result.content, lambda path: rules.read_refusal(path) is not None
    )
    return result


class ApprovalMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[object]]],
    ) -> ToolMessage | Command[object]:
        context = require_run_context(request.runtime.context)
        if request.tool is None:
            return await handler(request)  # no such tool: the model is told so, nobody is asked
        call = request.tool_call
        args = call.get("args") or {}
        verdict = hook_verdict(
            context.policy.check(call["name"], args),
            *hook_decision(context.hooks, call["id"] or ""),
            call["name"],
        )
        if verdict is None:
            return await _run(context, request, handler)
        if verdict.refused:
            return refuse(context, call, verdict.reason)
        event = ApprovalRequested(
            call_id=call["id"] or "",
            tool=call["name"],
            kind=verdict.kind,
            args=args,
            summary=summarize_call(call["name"], args),
            reason=verdict.reason,
            diff=await proposed_diff(context.backend, call["name"], args),
            agent=context.agent,
            mcp_server=verdict.origin.server if verdict.origin else "",
            mcp_tool=verdict.origin.tool if verdict.origin and verdict.origin.server else "",
            every_time=verdict.every_time,
            suggestion=""
            if verdict.every_time or context.policy.rules is None
            else suggest_rule(call["name"], args, context.backend.is_inside_workspace),
        )
        context.emit(event)
        if context.hooks is not None:
            context.hooks.notify(
                current_thread_id(),
                f"dcode needs your permission to use {call['name']}",
                "permission_prompt",
                context.emit,
                agent=context.agent,
            )
        decision = await context.approver.decide(event)
        context.emit(
            ApprovalResolved(
                call["id"] or "", decision.approved, decision.feedback, agent=context.agent
            )
        )
        if decision.approved:
            if decision.remember and not verdict.every_time:
                remember(context.policy, verdict, whole_server=decision.whole_server)
            if decision.mode is not None:
                context.policy.enter(decision.mode)
            if decision.save_rule and context.policy.rules is not None:
                await _keep(context, decision)
            return await _run(context, request, handler)
        if (
            verdict.kind is ApprovalKind.PLAN
        ):  # a plan sent back or put aside: no permission was denied
            return denied_message(
                call, denial_reason(verdict, decision), end_turn=decision.end_turn
            )
        return refuse(context, call, denial_reason(verdict, decision))

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[object]],
    ) -> ToolMessage | Command[object]:
        """The synchronous path cannot wait for a person, so gated calls are denied."""
        context = require_run_context(request.runtime.context)
        if request.tool is None:
            return handler(request)
        call = request.tool_call
        verdict = context.policy.check(call["name"], call.get("args") or {})
        if verdict is None:
            return handler(request)
        if verdict.refused:
            return refuse(context, call, verdict.reason)
        return refuse(context, call, f"{verdict.reason}; approvals need the interactive runner")
