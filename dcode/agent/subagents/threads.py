"""Where a ``task`` call's subagent runs, known from the parent's saved messages alone: the
call's number in its thread, that number's thread (``SESSION/task/N``) and agent path.

Light on purpose (no langchain agents, no graph): a resumed transcript finds each task's thread
with these before the engine has loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from dcode.agent.tools.spec import TASK


def task_thread(parent_thread: str, number: int) -> str:
    """The thread of the parent's ``number``-th ``task`` call: ``SESSION/task/N``."""
    return f"{parent_thread}/task/{number}"


def task_path(parent: tuple[str, ...], number: int) -> tuple[str, ...]:
    return (*parent, f"task:{number}")


def call_number(messages: Sequence[BaseMessage], call_id: str) -> int:
    """Which ``task`` call of the thread ``call_id`` is, from 1 (the calls counted in order);
    one past the last when it is not there yet."""
    number = 0
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"] == TASK.name:
                    number += 1
                    if call["id"] == call_id:
                        return number
    return number + 1


def task_calls(messages: Sequence[BaseMessage]) -> int:
    """How many ``task`` calls the thread's messages hold: the next one's number is one more."""
    return sum(
        1
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["name"] == TASK.name
    )
