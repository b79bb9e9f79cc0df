"""What a turn's runner needs to stop a turn and leave its thread whole, apart from the runner
(whose imports are the agent's, a second and more): the remote engine and ``dcode attach`` use
them too, without the agent.
"""

# Any: the task's result, and LangChain's messages, are untyped here

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

T = TypeVar("T")


@dataclass
class TurnInterrupt:
    """Where the running turn's interrupt stands.

    ``request`` cancels the turn's task only while it waits in ``guard``; otherwise the request
    is only noted, and the turn stops at its next step. ``absorb`` takes back the task
    cancellation the request caused, so the consumer's task goes on as if nothing happened.
    """

    task: asyncio.Task[Any]
    requested: bool = False
    _waiting: bool = False
    _delivered: bool = False

    @classmethod
    def begin(cls, running: TurnInterrupt | None) -> TurnInterrupt:
        """The interrupt of a turn that starts in the current task. ``running`` is the
        session's turn still going, if any: a session runs one turn at a time."""
        if running is not None:
            raise RuntimeError("a turn is already running in this session")
        task = asyncio.current_task()
        assert task is not None, "a turn runs in a task"
        return cls(task)

    def request(self) -> None:
        if self.requested:
            return
        self.requested = True
        if self._waiting:
            self._delivered = True
            self.task.cancel()

    async def guard(self, step: Awaitable[T]) -> T:
        self._waiting = True
        try:
            return await step
        finally:
            self._waiting = False

    def absorb(self) -> bool:
        """Undo the cancellation ``request`` caused, if any; True when the task is still being
        cancelled by someone else (its consumer is going away)."""
        if self._delivered:
            self._delivered = False
            return self.task.uncancel() > 0
        return self.task.cancelling() > 0


def dangling_tool_calls(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    missing: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, AIMessage):
            missing.extend(
                (c["id"], c["name"])
                for c in message.tool_calls
                if c["id"] and c["id"] not in answered
            )
    return missing
