"""``PreToolUse`` and ``PostToolUse`` hooks around each tool call, as a ``wrap_tool_call``
middleware that sits outside the approval.

Outside, so that a ``PreToolUse`` hook that rewrites the input (``updatedInput``) has the
rewritten call asked about and run, and a hook's ``permissionDecision`` reaches the approval
(``hook_verdict``): ``deny`` refuses the call, ``ask`` asks even where the mode would not, and
``allow`` runs it without asking, but never past a ``deny`` rule, an ``ask`` rule or a
protected file. A block (exit 2, or ``decision: "block"``) refuses the call with the hook's
words for the model. ``PostToolUse`` sees the result; its block reason and added context go to
the model after the result. Whatever a hook blocks or changes is said in one notice line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, AgentState, ToolCallRequest
from langchain_core.messages import ToolCall, ToolMessage
from langgraph.types import Command

from dcode.agent.events import Notice
from dcode.agent.hooks.outcome import Outcome, stopped_line
from dcode.agent.hooks.runner import claude_tool_name
from dcode.agent.markers import END_TURN_MARKER
from dcode.agent.middleware.approval import refuse
from dcode.agent.middleware.run_context_required import require_run_context
from dcode.agent.run_context import RunContext, current_thread_id
from dcode.agent.tools.summary import summarize_call


def _payload(call: ToolCall) -> dict[str, object]:
    return {
        "session_id": current_thread_id(),
        "tool_name": claude_tool_name(call["name"]),
        "tool_input": dict(call.get("args") or {}),
        "tool_use_id": call["id"] or "",
    }


class HooksMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[object]]],
    ) -> ToolMessage | Command[object]:
        context = require_run_context(request.runtime.context)
        hooks = context.hooks
        if hooks is None or request.tool is None:
            return await handler(request)
        call = request.tool_call
        before = await hooks.fire(
            "PreToolUse", _payload(call), context.emit, target=call["name"], agent=context.agent
        )
        if before.stop:
            return _stop(context, call, before.stop_reason)
        if before.blocked:
            context.emit(Notice(f"a PreToolUse hook blocked {call['name']}", agent=context.agent))
            return refuse(context, call, before.reason or "blocked by a hook")
        if before.updated_input is not None:
            call = {**call, "args": {**(call.get("args") or {}), **before.updated_input}}
            shown = summarize_call(call["name"], call["args"])
            context.emit(
                Notice(f"a PreToolUse hook changed the call: {shown}", agent=context.agent)
            )
            request = request.override(tool_call=call)
        if before.decision:
            hooks.decisions[call["id"] or ""] = (before.decision, before.reason)
        result = await handler(request)
        if isinstance(result, ToolMessage):
            after = await hooks.fire(
                "PostToolUse",
                {**_payload(call), "tool_response": result.text},
                context.emit,
                target=call["name"],
                agent=context.agent,
            )
            _tell_model(result, after, context)
            if after.stop:
                context.emit(Notice(stopped_line(after.stop_reason), agent=context.agent))
                result.additional_kwargs[END_TURN_MARKER] = True
        return result


def _stop(context: RunContext, call: ToolCall, reason: str) -> ToolMessage:
    """``continue: false`` before a call: it does not run, and the turn ends there."""
    context.emit(Notice(stopped_line(reason), agent=context.agent))
    refused = refuse(context, call, reason or "a hook stopped the turn")
    refused.additional_kwargs[END_TURN_MARKER] = True
    return refused


def _tell_model(result: ToolMessage, after: Outcome, context: RunContext) -> None:
    """A ``PostToolUse`` block's reason and the hooks' added context, after the result."""
    notes = [f"PostToolUse hook: {after.reason}"] if after.blocked else []
    notes += after.context
    if not notes:
        return
    if after.blocked:
        context.emit(Notice(f"a PostToolUse hook objected: {after.reason}", agent=context.agent))
    if isinstance(result.content, str):
        result.content = "\n\n".join([result.content, *notes])
    else:
        result.content = [*result.content, *({"type": "text", "text": n} for n in notes)]
