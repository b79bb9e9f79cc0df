"""A run of dcode's graph without a ``RunContext`` stops before its first step, with one clear error.

Every dcode middleware and tool is typed ``AgentMiddleware[State, RunContext]`` and reads the
run's context (``runtime.context``) for the backend, the approval policy and approver, and the
event stream; none of them has a meaning without one, approval least of all: a tool call with
nobody to ask must not run. ``SessionRunner`` always passes a context. Anything that runs the
compiled graph itself (a test, a script) and forgets it gets ``MissingRunContext`` from here,
before the local context is looked for or the model is called, rather than an
``AttributeError`` from deep inside a middleware.

Hook: ``start_turn`` (the turn's shared before-agent node, ``sequence``), first in the graph's
list, so that it runs before every other.
"""

from __future__ import annotations

from langchain.agents.middleware import AgentState
from langgraph.runtime import Runtime

from dcode.agent.middleware.sequence import InSequence
from dcode.agent.run_context import MissingRunContext, RunContext, require_run_context

__all__ = ["MissingRunContext", "RunContextRequired", "require_run_context"]


class RunContextRequired(InSequence[AgentState[object]]):
    async def start_turn(self, state: AgentState[object], runtime: Runtime[RunContext]) -> None:
        require_run_context(runtime.context)
