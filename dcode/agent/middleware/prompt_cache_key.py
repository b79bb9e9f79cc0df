"""Prompt cache key: every model request of a thread carries the session id as
``prompt_cache_key``, so the provider routes a session's requests to the machines that hold its
cached prefix (OpenAI's prompt caching).

Hook: ``awrap_model_call`` adds it to the request's model settings, which langchain passes to
``ChatOpenAI`` as a per-call argument (top-level in the request on both wires). Per call, not on
the model: one model serves every session of the process. The graph has this middleware only
where the endpoint accepts the parameter (``ResolvedModel.prompt_cache_key``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse

from dcode.agent.run_context import RunContext, current_thread_id

PARAMETER = "prompt_cache_key"


class PromptCacheKeyMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        session_id = current_thread_id()
        if not session_id:
            return await handler(request)
        return await handler(
            request.override(model_settings={**request.model_settings, PARAMETER: session_id})
        )
