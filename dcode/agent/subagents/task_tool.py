"""``task``: hand a self-contained job to a subagent, and get back only its answer.

The call's number (which ``task`` call of the thread it is, from 1) is counted from the thread's
own history, so the subagent's thread, ``SESSION/task/N``, is known from the saved messages
alone: a resumed transcript finds each task's thread the same way.
"""

# Any: LangGraph's InjectedState and stream writer are untyped, and langchain types message content parts as bare dicts

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from langchain.tools import InjectedState, tool
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId
from langgraph.runtime import get_runtime

from dcode.agent.run_context import RunContext, current_thread_id, require_run_context
from dcode.agent.subagents.definitions import AgentDefinition
from dcode.agent.subagents.runs import Subagents, TaskRequest
from dcode.agent.subagents.threads import call_number
from dcode.agent.tools.args import TaskArgs
from dcode.agent.tools.result import ToolResult, ToolStatus
from dcode.agent.tools.result_message import message_fields
from dcode.agent.tools.spec import TASK

NAME = TASK.name

DESCRIPTION = """Hand a self-contained job to a subagent: it works in a fresh context of its \
own, with its own tools, and returns only its final answer to you.
- Use it for work that would fill your context with searching, reading or long output whose \
result is short: research across the code, a change made and checked in one place, a long \
command's outcome. Do simple lookups yourself.
- The subagent sees none of this conversation: the description must say everything it needs \
(the goal, paths, facts, constraints) and what to report back.
- Several task calls in one message run at the same time; use that for independent jobs.
- Its answer is for you: tell the user what matters in it.

Agents (subagent_type):
"""


def task_description(agents: Iterable[AgentDefinition]) -> str:
    return DESCRIPTION + "\n".join(
        f"- {agent.name}: {' '.join(agent.description.split())}" for agent in agents
    )


class TaskToolArgs(TaskArgs):
    state: Annotated[Any, InjectedState]
    tool_call_id: Annotated[str, InjectedToolCallId]


def make_task_tool(subagents: Subagents) -> BaseTool:
    @tool(
        NAME,
        description=task_description(subagents.catalog.agents.values()),
        args_schema=TaskToolArgs,
    )
    async def task(
        description: str,
        state: Any,
        tool_call_id: str,
        subagent_type: str = TaskArgs.model_fields["subagent_type"].default,
    ) -> ToolMessage:
        context = require_run_context(get_runtime(RunContext).context)
        outcome = await subagents.run(
            TaskRequest(
                agent_type=subagent_type,
                description=description,
                number=call_number(list(state["messages"]), tool_call_id),
                call_id=tool_call_id,
                parent=context,
                parent_thread=current_thread_id("session"),
                # The parent's emitter (a served run's writes JSON, and asks each question once)
                # reads the parent's run config when it writes: it is called in a copy of the
                # parent's context from the subagent's own.
                writer=_in_context(contextvars.copy_context(), context.emit),
            )
        )
        status = ToolStatus.ERROR if outcome.is_error else ToolStatus.OK
        fields = message_fields(ToolResult.of(outcome.content, status=status))
        return ToolMessage(**fields, tool_call_id=tool_call_id, name=NAME)

    return task


def _in_context(
    context: contextvars.Context, writer: Callable[[Any], None]
) -> Callable[[Any], None]:
    """``writer``, called in ``context`` whichever context calls it."""

    def write(chunk: Any) -> None:
        context.run(writer, chunk)

    return write
