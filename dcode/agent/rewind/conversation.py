"""The conversation as it was before a prompt: a new checkpoint of the same thread.

LangGraph forks a thread from any of its checkpoints (``update_state`` on that checkpoint's
config makes a new head whose parent it is), so rewinding adds a checkpoint rather than
deleting any: the thread's messages, todos, compaction and local context are all as they were.
Before the session's first prompt there is no checkpoint to fork from, and the thread is
deleted instead. Either way the threads of the ``task`` calls the rewind took away go too: the
next ``task`` call is numbered from the conversation as it now stands, and must not find an
old subagent's thread under its number.
"""

# Any: LangGraph's compiled graph is untyped here

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.graph import END

from dcode.agent.store.base import SessionStore
from dcode.agent.subagents.threads import task_calls


class RewindError(Exception):
    """The rewind cannot be done; the message is one line for the user."""


async def rewind_thread(
    graph: Any, store: SessionStore, session_id: str, checkpoint_id: str | None
) -> list[BaseMessage]:
    """Make the thread what it was at ``checkpoint_id`` (None: empty); returns its messages."""
    if checkpoint_id is None:
        await graph.checkpointer.adelete_thread(session_id)
        messages: list[BaseMessage] = []
    else:
        config = {
            "configurable": {
                "thread_id": session_id,
                "checkpoint_ns": "",
                "checkpoint_id": checkpoint_id,
            }
        }
        if await graph.checkpointer.aget_tuple(config) is None:
            raise RewindError(
                f"the conversation as it was then is no longer in {store.location} (checkpoint {checkpoint_id})"
            )
        await graph.aupdate_state(config, None, as_node=END)
        snapshot = await graph.aget_state({"configurable": {"thread_id": session_id}})
        messages = list(snapshot.values.get("messages", [])) if snapshot and snapshot.values else []
    # Through the graph's checkpointer, which forgets what it remembered of them.
    for thread in await asyncio.to_thread(
        store.task_threads, session_id, above=task_calls(messages)
    ):
        await graph.checkpointer.adelete_thread(thread)
    return messages
