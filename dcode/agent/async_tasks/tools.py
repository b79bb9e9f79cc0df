"""The five async task tools: start, check, update, cancel and list tasks on remote agents.

Their arguments are Deep Agents' (``description``/``subagent_type``, ``task_id``, ``message``,
``status_filter``), so a model used to those calls them as it expects. Each returns a short
text; a call that changes a task also updates its record in the private ``async_tasks`` state
(``records``). What the remote thread holds never enters this conversation: ``check`` returns
its last answer only, cut at ``ANSWER_CHARS``.
"""

# Any: LangGraph injects the agent's state untyped, and langgraph-sdk returns JSON dicts

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal

from langchain.tools import InjectedState, tool
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId
from langgraph.types import Command
from pydantic import BaseModel

from dcode.agent.async_tasks.records import RUNNING, AsyncTask, is_live, now
from dcode.agent.async_tasks.remote import WAITING, RemoteAgents, RemoteError, failure_line
from dcode.agent.async_tasks.words import head
from dcode.agent.tools import args as arguments
from dcode.agent.tools.result import ToolResult, ToolStatus
from dcode.agent.tools.result_message import message_fields
from dcode.agent.tools.spec import (
    CANCEL_ASYNC_TASK,
    CHECK_ASYNC_TASK,
    LIST_ASYNC_TASKS,
    START_ASYNC_TASK,
    UPDATE_ASYNC_TASK,
)

ANSWER_CHARS = 4000
"""The most of a task's last answer ``check_async_task`` returns; the rest is cut with a note."""
DESCRIPTION_CHARS = 80
QUESTION_CHARS = 300
"""The most of a waiting task's question ``check_async_task`` returns."""

START_DESCRIPTION = """Start a job on a remote agent: it runs there in the background, in a \
thread of its own, and this returns its task_id at once.
- The remote agent sees none of this conversation: the description must say everything it \
needs and what to report back.
- After starting, tell the user the task_id and go on; do not check it right away, and never \
poll it in a loop. Check it when the user asks, or when you need its result.
- Several tasks may run at the same time.

Remote agents (subagent_type):
"""
CHECK_DESCRIPTION = """Ask a remote task for its status now, and its answer once it has \
finished. A status seen earlier in this conversation may be stale: check again rather than \
repeat it. Pass the task_id exactly as start_async_task returned it."""
UPDATE_DESCRIPTION = """Send a follow-up message to a remote task, on the same thread: a run \
still going is stopped and a new one starts with the message (the task_id stays the same)."""
CANCEL_DESCRIPTION = """Stop a remote task that is no longer needed."""
LIST_DESCRIPTION = """List the remote tasks started in this session, each with its status \
asked of its server now (``status_filter``: running, success, error, cancelled, or all)."""


class _CallId(BaseModel):
    tool_call_id: Annotated[str, InjectedToolCallId]


class _Injected(_CallId):
    state: Annotated[Any, InjectedState]
    """The graph's state, for the task records (``async_tasks``)."""


class StartSchema(arguments.StartAsyncTaskArgs, _CallId):
    pass


class TaskIdSchema(arguments.TaskIdArgs, _Injected):
    pass


class UpdateSchema(arguments.UpdateAsyncTaskArgs, _Injected):
    pass


class ListSchema(arguments.ListAsyncTasksArgs, _Injected):
    pass


def make_async_task_tools(remote: RemoteAgents) -> list[BaseTool]:
    """The five tools over ``remote``'s servers (one at least)."""
    catalog = "\n".join(f"- {agent.name}" for agent in remote.agents.values())

    @tool(START_ASYNC_TASK.name, description=START_DESCRIPTION + catalog, args_schema=StartSchema)
    async def start_async_task(
        description: str, subagent_type: str, tool_call_id: str
    ) -> ToolMessage | Command[Any]:
        return await _start(remote, description, subagent_type, tool_call_id)

    @tool(CHECK_ASYNC_TASK.name, description=CHECK_DESCRIPTION, args_schema=TaskIdSchema)
    async def check_async_task(
        task_id: str, state: Any, tool_call_id: str
    ) -> ToolMessage | Command[Any]:
        async def check(task: AsyncTask) -> tuple[str, AsyncTask]:
            return await _check_task(remote, task)

        return await _on_task(remote, state, task_id, tool_call_id, CHECK_ASYNC_TASK.name, check)

    @tool(UPDATE_ASYNC_TASK.name, description=UPDATE_DESCRIPTION, args_schema=UpdateSchema)
    async def update_async_task(
        task_id: str, message: str, state: Any, tool_call_id: str
    ) -> ToolMessage | Command[Any]:
        async def update(task: AsyncTask) -> tuple[str, AsyncTask]:
            return await _update(remote, task, message)

        return await _on_task(remote, state, task_id, tool_call_id, UPDATE_ASYNC_TASK.name, update)

    @tool(CANCEL_ASYNC_TASK.name, description=CANCEL_DESCRIPTION, args_schema=TaskIdSchema)
    async def cancel_async_task(
        task_id: str, state: Any, tool_call_id: str
    ) -> ToolMessage | Command[Any]:
        async def cancel(task: AsyncTask) -> tuple[str, AsyncTask]:
            return await _cancel(remote, task)

        return await _on_task(remote, state, task_id, tool_call_id, CANCEL_ASYNC_TASK.name, cancel)

    @tool(LIST_ASYNC_TASKS.name, description=LIST_DESCRIPTION, args_schema=ListSchema)
    async def list_async_tasks(
        state: Any,
        tool_call_id: str,
        status_filter: Literal["running", "success", "error", "cancelled", "all"] | None = None,
    ) -> ToolMessage | Command[Any]:
        return await _list(remote, _records(state), status_filter, tool_call_id)

    return [
        start_async_task,
        check_async_task,
        update_async_task,
        cancel_async_task,
        list_async_tasks,
    ]


def _records(state: Any) -> dict[str, AsyncTask]:
    records = state.get("async_tasks") if isinstance(state, Mapping) else None
    return dict(records or {})


def _reply(
    text: str,
    call_id: str,
    name: str,
    *,
    error: bool = False,
    tasks: dict[str, AsyncTask] | None = None,
) -> ToolMessage | Command[Any]:
    """The call's result; with ``tasks``, a state update that records them beside it."""
    result = ToolResult.of(text, status=ToolStatus.ERROR if error else ToolStatus.OK)
    message = ToolMessage(**message_fields(result), tool_call_id=call_id, name=name)
    if not tasks:
        return message
    return Command(update={"messages": [message], "async_tasks": tasks})


async def _start(
    remote: RemoteAgents, description: str, agent_name: str, call_id: str
) -> ToolMessage | Command[Any]:
    name = START_ASYNC_TASK.name
    try:
        agent = remote.agent(agent_name)
    except RemoteError as exc:
        return _reply(str(exc), call_id, name, error=True)
    try:
        thread, run = await _launch(remote.client(agent_name), agent.assistant, description)
    except RemoteError as exc:
        return _reply(str(exc), call_id, name, error=True)
    except Exception as exc:  # noqa: BLE001 - the SDK raises httpx's and its own errors untyped
        return _reply(failure_line(agent, exc), call_id, name, error=True)
    task_id = thread["thread_id"]
    record = AsyncTask(
        task_id=task_id,
        agent_name=agent_name,
        thread_id=task_id,
        run_id=run["run_id"],
        status=run.get("status") or RUNNING,
        description=_line(description),
        created_at=now(),
        last_checked_at=now(),
    )
    text = (
        f"{head(task_id, agent_name, record['status'])} It has started and runs in the "
        f"background.\ntask_id: {task_id}"
    )
    return _reply(text, call_id, name, tasks={task_id: record})


async def _launch(client: Any, assistant: str, description: str) -> tuple[Any, Any]:
    """A new thread with a run of ``assistant`` on it; a run refused (an assistant the server
    does not serve) leaves no empty thread behind."""
    thread = await client.threads.create()
    try:
        run = await client.runs.create(
            thread["thread_id"], assistant, input=_user_input(description)
        )
    except Exception:
        with contextlib.suppress(Exception):  # the refusal is what the model is told
            await client.threads.delete(thread["thread_id"])
        raise
    return thread, run


TaskStep = Callable[[AsyncTask], Awaitable[tuple[str, AsyncTask]]]


async def _on_task(
    remote: RemoteAgents, state: Any, task_id: str, call_id: str, name: str, step: TaskStep
) -> ToolMessage | Command[Any]:
    """Run ``step`` on the record of ``task_id``; a failure is one line, the record kept."""
    task = _records(state).get(task_id.strip())
    if task is None:
        return _reply(
            f"No task {task_id} was started in this session; list_async_tasks shows those that were.",
            call_id,
            name,
            error=True,
        )
    try:
        text, updated = await step(task)
    except RemoteError as exc:
        return _reply(str(exc), call_id, name, error=True)
    except Exception as exc:  # noqa: BLE001 - the SDK raises httpx's and its own errors untyped
        line = failure_line(remote.agent(task["agent_name"]), exc, task_id=task["task_id"])
        return _reply(line, call_id, name, error=True)
    return _reply(text, call_id, name, tasks={updated["task_id"]: updated})


async def _check_task(remote: RemoteAgents, task: AsyncTask) -> tuple[str, AsyncTask]:
    client = remote.client(task["agent_name"])
    status = task["status"]
    if is_live(status):
        status = await remote.run_status(task["agent_name"], task["thread_id"], task["run_id"])
    line = head(task["task_id"], task["agent_name"], status)
    updated = AsyncTask(**{**task, "status": status, "last_checked_at": now()})
    if status in ("pending", RUNNING):
        return f"{line} It has not finished; check again later.", updated
    if status == "error":
        return f"{line} The remote run failed.", updated
    if status == "cancelled":
        return line, updated
    thread_state = await client.threads.get_state(task["thread_id"])
    if status == WAITING:
        return f"{line} {_waiting_on(thread_state)}", updated
    return f"{line}\n{_last_answer(thread_state)}", updated


async def _update(remote: RemoteAgents, task: AsyncTask, message: str) -> tuple[str, AsyncTask]:
    agent = remote.agent(task["agent_name"])
    run = await remote.client(agent.name).runs.create(
        task["thread_id"],
        agent.assistant,
        input=_user_input(message),
        multitask_strategy="interrupt",  # a run still going stops; the new one has the message
    )
    updated = AsyncTask(
        **{
            **task,
            "run_id": run["run_id"],
            "status": run.get("status") or RUNNING,
            "last_checked_at": now(),
        }
    )
    text = (
        f"{head(task['task_id'], agent.name, updated['status'])} The message went to its "
        "thread, in a new run."
    )
    return text, updated


async def _cancel(remote: RemoteAgents, task: AsyncTask) -> tuple[str, AsyncTask]:
    if is_live(task["status"]):
        await remote.client(task["agent_name"]).runs.cancel(task["thread_id"], task["run_id"])
    updated = AsyncTask(**{**task, "status": "cancelled", "last_checked_at": now()})
    return head(task["task_id"], task["agent_name"], "cancelled"), updated


async def _list(
    remote: RemoteAgents, records: dict[str, AsyncTask], status_filter: str | None, call_id: str
) -> ToolMessage | Command[Any]:
    """Every record, its status asked again where it may have changed; a server that does not
    answer leaves the status last seen, marked so."""
    name = LIST_ASYNC_TASKS.name
    if not records:
        return _reply("No async tasks have been started in this session.", call_id, name)
    refreshed: dict[str, AsyncTask] = {}
    lines = []
    for task in records.values():
        note = ""
        if is_live(task["status"]):
            try:
                status = await remote.run_status(
                    task["agent_name"], task["thread_id"], task["run_id"]
                )
                task = AsyncTask(**{**task, "status": status, "last_checked_at": now()})
                refreshed[task["task_id"]] = task
            except Exception as exc:  # noqa: BLE001 - one server down leaves the others listed
                note = f" (as last seen: {_reason(remote, task, exc)})"
        if _matches(task["status"], status_filter):
            lines.append(
                f"- {task['task_id']} · {task['agent_name']} · {task['status']}{note} · {task['description']}"
            )
    shown = status_filter if status_filter not in (None, "all") else ""
    text = "\n".join(lines) if lines else f"No {shown} tasks.".replace("  ", " ")
    return _reply(text, call_id, name, tasks=refreshed or None)


def _matches(status: str, status_filter: str | None) -> bool:
    if status_filter in (None, "all"):
        return True
    if status_filter == RUNNING:
        return status in ("pending", RUNNING)
    return status == status_filter


def _reason(remote: RemoteAgents, task: AsyncTask, exc: Exception) -> str:
    if isinstance(exc, RemoteError):
        return str(exc)
    return failure_line(remote.agent(task["agent_name"]), exc, task_id=task["task_id"])


def _user_input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _waiting_on(thread_state: Any) -> str:
    """What the model is told of a task that stopped on a question for a person: that only its
    own server can answer it, and the question's first ``QUESTION_CHARS``."""
    value = _question(thread_state)
    if value is None:
        return "It was stopped before it finished."
    question = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(question) > QUESTION_CHARS:
        question = question[: QUESTION_CHARS - 1] + "…"
    return (
        "It waits for an answer that only a person on its own server can give, and does "
        "nothing until then (update_async_task sends it a message in a new run; "
        f"cancel_async_task ends it).\nIts question: {question}"
    )


def _question(thread_state: Any) -> Any:
    """The first interrupt's value: the state's ``interrupts``, or its tasks' (older servers)."""
    if not isinstance(thread_state, Mapping):
        return None
    found = list(thread_state.get("interrupts") or ())
    for task in thread_state.get("tasks") or ():
        if isinstance(task, Mapping):
            found.extend(task.get("interrupts") or ())
    for item in found:
        if isinstance(item, Mapping) and item.get("value") is not None:
            return item["value"]
    return None


def _last_answer(thread_state: Any) -> str:
    """The remote thread's last message as text, cut at ``ANSWER_CHARS`` with a note."""
    values = thread_state.get("values") if isinstance(thread_state, Mapping) else None
    messages = values.get("messages") if isinstance(values, Mapping) else None
    if not messages:
        return "It finished without an answer."
    text = _text_of(
        messages[-1].get("content") if isinstance(messages[-1], Mapping) else messages[-1]
    )
    if len(text) <= ANSWER_CHARS:
        return f"Answer:\n{text}"
    cut = len(text) - ANSWER_CHARS
    return f"Answer (its last {cut} characters cut):\n{text[:ANSWER_CHARS]}"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or (isinstance(part, Mapping) and part.get("type") == "text")
        )
    return str(content or "")


def _line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 1] + "…"
