"""The session's budget in the agent loop: checked before each model request, charged after.

Hooks: ``start_step`` (in the step's shared before-model node, ``sequence``) raises ``BudgetReached`` when the session is at a limit, before the
compaction's hook (which may itself ask the model for a summary) and before the request; the
step already done is in the checkpoint, so nothing is lost, and the next turn goes on from
there. ``awrap_model_call`` charges the answer's usage to the run's agent, priced with the
graph's model (``Tariff``), and puts the warnings for the levels crossed on the stream. A served
run's budget has a book (``SessionBudget.book``): the first check reads the spend before it (when
the run has a limit), and each charge is handed to it at once (the server writes it behind the
run, ``dcode.server.writes``). A run without a budget (``RunContext.budget`` None) is neither
checked nor charged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentState, ModelRequest, ModelResponse
from langgraph.runtime import Runtime

from dcode.agent.budget import Tariff
from dcode.agent.middleware.sequence import InSequence
from dcode.agent.middleware.token_calibration import answer_with_usage
from dcode.agent.run_context import RunContext, require_run_context


class BudgetMiddleware(InSequence[AgentState[object]]):
    def __init__(self, tariff: Tariff) -> None:
        super().__init__()
        self.tariff = tariff

    async def start_step(
        self, state: AgentState[object], runtime: Runtime[RunContext]
    ) -> dict[str, object] | None:
        budget = require_run_context(runtime.context).budget
        if budget is not None:
            await budget.acheck()
        return None

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        response = await handler(request)
        context = require_run_context(request.runtime.context)
        answer = answer_with_usage(response)
        if context.budget is not None and answer is not None:
            await context.budget.acharge(self.tariff, answer, context.emit)
        return response
