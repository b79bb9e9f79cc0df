"""The todo list: langchain's ``TodoListMiddleware`` (its ``write_todos`` tool, its prompt, its
``todos`` state), with its rule of one ``write_todos`` call a model turn kept without a node.

LangChain checks that rule in an ``after_model`` hook, which ``create_agent`` makes a node of:
a checkpoint at every step, a PostgreSQL write on a served graph (``middleware.sequence`` says
why that matters). Here the same check runs as the model's answer comes back
(``awrap_model_call``): an answer with more than one ``write_todos`` call gets an error result
for each of them in the model's own update, so that none runs (the tools node runs only the
calls nothing answered yet) and the model is asked again, as LangChain's hook has it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    TodoListMiddleware,
)
from langchain.agents.middleware.todo import PlanningState
from langchain_core.messages import AIMessage, ToolMessage

from dcode.agent.run_context import RunContext
from dcode.agent.tools.spec import WRITE_TODOS

PARALLEL_TODOS = (
    "Error: write_todos was called more than once in one answer, and each call replaces the "
    "whole list. None of them was applied: call it once with the complete list."
)


def parallel_todos(answer: AIMessage) -> list[ToolMessage]:
    """An error result for each ``write_todos`` call of ``answer``, when it makes more than one."""
    calls = [call for call in answer.tool_calls if call["name"] == WRITE_TODOS.name]
    if len(calls) < 2:
        return []
    return [
        ToolMessage(
            content=PARALLEL_TODOS, tool_call_id=call["id"], name=call["name"], status="error"
        )
        for call in calls
    ]


class TodosState(PlanningState[object]):
    """LangChain's todo state (``todos``), as this middleware's own schema."""


class TodosMiddleware(AgentMiddleware[TodosState, RunContext]):
    state_schema = TodosState

    def __init__(self) -> None:
        super().__init__()
        self.todo = TodoListMiddleware[object, RunContext]()
        self.tools = self.todo.tools

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        answered = await self.todo.awrap_model_call(request, handler)
        response = answered if isinstance(answered, ModelResponse) else ModelResponse([answered])
        answer = next((m for m in response.result if isinstance(m, AIMessage)), None)
        errors = parallel_todos(answer) if answer is not None else []
        if not errors:
            return response
        return ModelResponse([*response.result, *errors], response.structured_response)
