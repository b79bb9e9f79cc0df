"""The task records: one per started async task, kept in the graph's private state.

They are a channel of their own (``async_tasks``), never messages: the model reads only what a
tool returns, while the records ride in every checkpoint, so a resumed session still knows its
tasks. No ``from __future__ import annotations`` here: langchain reads the state schema's
annotations as objects.
"""

from datetime import UTC, datetime
from typing import Annotated, NotRequired, TypedDict

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr

from dcode.agent.events import AsyncTaskStatus

RUNNING = "running"
DONE_STATUSES = frozenset({"success", "error", "interrupted", "timeout"})
"""Run statuses after which a task does nothing more until it is updated."""
CANCELLED = "cancelled"


class AsyncTask(TypedDict):
    task_id: str
    """What the model names the task by: the remote thread's id."""
    agent_name: str
    """The ``[[async_agents]]`` entry it runs on."""
    thread_id: str
    run_id: str
    """The newest run on the thread (an update starts another)."""
    status: str
    """The run's status as last seen (``pending``, ``running``, ``success``, ``error``,
    ``interrupted``, ``timeout``), or ``cancelled``."""
    description: str
    """The job as started (a line of it, for lists and the screen)."""
    created_at: str
    last_checked_at: str


def merge_tasks(
    existing: dict[str, AsyncTask] | None, update: dict[str, AsyncTask] | None
) -> dict[str, AsyncTask]:
    """A tool's update replaces the records it names and keeps the others."""
    return {**(existing or {}), **(update or {})}


class AsyncTasksState(AgentState[object]):
    # The reducer last: LangGraph takes a field's reducer from its last annotation only.
    async_tasks: Annotated[NotRequired[dict[str, AsyncTask]], PrivateStateAttr, merge_tasks]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_live(status: str) -> bool:
    """Whether a task may still change on its own (its status is worth asking for again)."""
    return status not in DONE_STATUSES and status != CANCELLED


def status_event(
    task: AsyncTask, *, call_id: str = "", agent: tuple[str, ...] = (), error: str = ""
) -> AsyncTaskStatus:
    """The record as the event a screen draws it from."""
    return AsyncTaskStatus(
        task_id=task["task_id"],
        agent_name=task["agent_name"],
        status=task["status"],
        description=task["description"],
        run_id=task["run_id"],
        created_at=task["created_at"],
        call_id=call_id,
        error=error,
        agent=agent,
    )
