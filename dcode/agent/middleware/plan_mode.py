"""Plan mode in the agent loop (``dcode.agent.plan_mode`` says what it is).

Hooks:
- ``awrap_model_call``: in plan mode, the plan-mode instructions go at the end of the system
  message (after the stable prefix the provider caches); outside it, ``exit_plan_mode`` is
  taken out of the request's tools, so the model is offered it only when it means something.
- ``awrap_tool_call``: an ``exit_plan_mode`` call outside plan mode is answered without running
  anything; in plan mode the plan is saved beside the session's archive before the user is
  asked (by the approval middleware, inside this one).
- ``start_step`` (in the step's shared before-model node, ``sequence``): when the last tool results include one marked ``END_TURN_MARKER`` (a plan
  rejected, or presented headless), the loop ends there instead of asking the model again.
The refusals themselves are the approval policy's (``ApprovalPolicy.check``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from langchain.agents.middleware import (
    AgentState,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Command

from dcode.agent.markers import END_TURN_MARKER
from dcode.agent.middleware.run_context_required import require_run_context
from dcode.agent.middleware.sequence import InSequence
from dcode.agent.middleware.system_sections import with_section
from dcode.agent.plan_mode import PLAN_PROMPT, SUBAGENT_PLAN_PROMPT, save_plan
from dcode.agent.run_context import RunContext, current_thread_id
from dcode.agent.tools.result import ToolResult
from dcode.agent.tools.result_message import message_fields
from dcode.agent.tools.spec import EXIT_PLAN_MODE
from dcode.settings.config import ApprovalMode

log = logging.getLogger(__name__)

NOT_IN_PLAN_MODE = "Not in plan mode: there is no plan to approve. Carry on with the task."


def _name(tool: BaseTool | Mapping[str, object]) -> str:
    return tool.name if isinstance(tool, BaseTool) else str(tool.get("name", ""))


def ends_turn(messages: Sequence[object]) -> bool:
    """Whether the tool results that close the history include one that ends the turn."""
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            return False
        if message.additional_kwargs.get(END_TURN_MARKER):
            return True
    return False


class PlanModeMiddleware(InSequence[AgentState[object]]):
    step_jumps = ("end",)

    def __init__(self, history_dir: Path) -> None:
        super().__init__()
        self.history_dir = history_dir

    async def start_step(
        self, state: AgentState[object], runtime: Runtime[RunContext]
    ) -> dict[str, object] | None:
        return {"jump_to": "end"} if ends_turn(list(state["messages"])) else None

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        if require_run_context(request.runtime.context).policy.mode is ApprovalMode.PLAN:
            presents = any(_name(tool) == EXIT_PLAN_MODE.name for tool in request.tools)
            return await handler(
                with_section(request, PLAN_PROMPT if presents else SUBAGENT_PLAN_PROMPT)
            )
        tools = [tool for tool in request.tools if _name(tool) != EXIT_PLAN_MODE.name]
        return await handler(
            request.override(tools=tools) if len(tools) != len(request.tools) else request
        )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[object]]],
    ) -> ToolMessage | Command[object]:
        call = request.tool_call
        if call["name"] != EXIT_PLAN_MODE.name or request.tool is None:
            return await handler(request)
        context = require_run_context(request.runtime.context)
        if context.policy.mode is not ApprovalMode.PLAN:
            fields = message_fields(ToolResult(NOT_IN_PLAN_MODE))
            return ToolMessage(**fields, tool_call_id=call["id"], name=call["name"])
        plan = (call.get("args") or {}).get("plan")
        if isinstance(plan, str) and plan.strip():
            try:
                await asyncio.to_thread(
                    save_plan, self.history_dir, current_thread_id("session"), plan
                )
            except OSError:  # the question matters more than the copy
                log.debug("saving the plan failed", exc_info=True)
        return await handler(request)
