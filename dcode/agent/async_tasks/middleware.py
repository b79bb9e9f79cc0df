"""``AsyncTasksMiddleware``: the async task tools, and the private state that records their
tasks, added to the session's agent when the user has configured a remote agent."""

# Any: create_agent's middleware are generic over the agent's state and context

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware

from dcode.agent.async_tasks.records import AsyncTasksState
from dcode.agent.async_tasks.remote import RemoteAgents
from dcode.agent.async_tasks.tools import make_async_task_tools


class AsyncTasksMiddleware(AgentMiddleware[Any, Any]):
    state_schema = AsyncTasksState

    def __init__(self, remote: RemoteAgents) -> None:
        super().__init__()
        self.remote = remote
        self.tools = make_async_task_tools(remote)
