"""Compaction, tier 2, in the agent loop: a long conversation's older part, summarized.

Hooks: ``start_step`` (in the step's shared before-model node, ``sequence``) asks the
``Compactor`` (``dcode.agent.compaction.summary``) before each
model call whether the conversation reaches tier 2's trigger, and if a compaction is made its
record goes into private state; ``awrap_model_call`` then sends ``[summary, *messages after the
cut]`` (``effective_messages``). When a summary fails or would not help, the next try waits
for the user's next message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, NotRequired

from langchain.agents.middleware import AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langgraph.runtime import Runtime

from dcode.agent.compaction.record import Compaction, effective_messages, read_compaction
from dcode.agent.compaction.summary import CompactionFailed, Compactor, latest_user_index
from dcode.agent.events import CompactionRefused
from dcode.agent.middleware.request_messages import request_messages
from dcode.agent.middleware.sequence import InSequence
from dcode.agent.run_context import RunContext, current_thread_id, require_run_context


def _pre_compact(context: RunContext, thread: str) -> Callable[[], Awaitable[object]] | None:
    """The ``PreCompact`` hooks (trigger ``auto``) to run before the window's own compaction."""
    hooks = context.hooks
    if hooks is None or not hooks.has("PreCompact"):
        return None
    payload = {"session_id": thread, "trigger": "auto", "custom_instructions": ""}
    return lambda: hooks.fire(
        "PreCompact", payload, context.emit, target="auto", agent=context.agent
    )


class SummarizationState(AgentState):
    compaction: NotRequired[Annotated[Compaction, PrivateStateAttr]]


class SummarizationMiddleware(InSequence[SummarizationState]):
    state_schema = SummarizationState

    def __init__(self, compactor: Compactor) -> None:
        super().__init__()
        self.compactor = compactor
        # Where a summary failed, by thread: the user's message it failed under. The next try
        # waits for the next user message rather than coming at every step of the turn.
        self._failed: dict[str, int] = {}

    async def start_step(
        self, state: SummarizationState, runtime: Runtime[RunContext]
    ) -> dict[str, object] | None:
        messages = state["messages"]
        thread = current_thread_id("session")
        latest = latest_user_index(messages)
        if self._failed.get(thread) == latest:
            return None
        try:
            done = await self.compactor.compact(
                messages,
                read_compaction(state),
                session_id=thread,
                emit=require_run_context(runtime.context).emit,
                pre_compact=_pre_compact(require_run_context(runtime.context), thread),
                budget=require_run_context(runtime.context).budget,
            )
        except CompactionFailed:
            self._failed[thread] = latest
            return None
        if isinstance(done, CompactionRefused):
            self._failed[thread] = latest  # it would not help: not again until the next message
            return None
        if done is None:
            return None
        self._failed.pop(thread, None)
        return {"compaction": done.event}

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        event = read_compaction(request.state)
        if event is None:
            return await handler(request)
        return await handler(
            request.override(messages=request_messages(effective_messages(request.messages, event)))
        )
