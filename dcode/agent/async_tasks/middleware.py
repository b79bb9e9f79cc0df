"""``AsyncTasksMiddleware``: the async task tools, and the private state that records their
tasks, added to the session's agent when the user has configured a remote agent.

Hook: ``awrap_tool_call``, for the five tools only: each record a call writes is also told on
the run's event stream as an ``AsyncTaskStatus`` (with the call's id), so a screen draws the
task as its own widget and the session's poller (``poller``) knows which tasks to follow.
"""

# Any: create_agent's middleware are generic over the agent's state and context

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from dcode.agent.async_tasks.records import AsyncTask, AsyncTasksState, status_event
from dcode.agent.async_tasks.remote import RemoteAgents
from dcode.agent.async_tasks.tools import make_async_task_tools
from dcode.agent.run_context import require_run_context


class AsyncTasksMiddleware(AgentMiddleware[Any, Any]):
    state_schema = AsyncTasksState

    def __init__(self, remote: RemoteAgents) -> None:
        super().__init__()
        self.remote = remote
        self.tools = make_async_task_tools(remote)
        self._names = frozenset(tool.name for tool in self.tools)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        result = await handler(request)
        if request.tool_call["name"] in self._names:
            context = require_run_context(request.runtime.context)
            call_id = str(request.tool_call.get("id") or "")
            for task in _written(result):
                context.emit(status_event(task, call_id=call_id, agent=context.agent))
        return result


def _written(result: object) -> list[AsyncTask]:
    """The task records a tool's ``Command`` writes (none for a plain result: a failure)."""
    update = result.update if isinstance(result, Command) else None
    tasks = update.get("async_tasks") if isinstance(update, Mapping) else None
    return list(tasks.values()) if isinstance(tasks, Mapping) else []
