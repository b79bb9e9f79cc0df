"""A store's threads, read and deleted through a LangGraph saver's public API only.

Every store keeps its conversations in a LangGraph checkpointer; these read one thread's latest
checkpoint (``get_tuple`` and the delta-channel history), find the threads of its ``task``
calls and delete them (``delete_thread``), whichever saver it is: no SQL against its tables.
"""

# Any: the compaction log is read from LangGraph checkpoint values, untyped

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dcode.agent.store.base import SavedThread

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver


def head(thread_id: str) -> RunnableConfig:
    """The config that names a thread's latest checkpoint."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def saved_thread(saver: BaseCheckpointSaver, thread_id: str) -> SavedThread | None:
    """The messages in the thread's latest checkpoint and its id; None without one."""
    from dcode.agent.history_channel import thread_messages

    saved = saver.get_tuple(head(thread_id))
    messages = None if saved is None else thread_messages(saver, saved)
    if saved is None or messages is None:
        return None
    return SavedThread(str(saved.config["configurable"]["checkpoint_id"]), messages)


def latest_id(saver: BaseCheckpointSaver, thread_id: str) -> str | None:
    saved = saver.get_tuple(head(thread_id))
    return str(saved.config["configurable"]["checkpoint_id"]) if saved else None


def compaction_log(saver: BaseCheckpointSaver, thread_id: str) -> list[dict[str, Any]]:
    """What the thread's compactions showed, from its latest checkpoint (which holds them whole)."""
    from dcode.agent.compaction.log import log_of

    saved = saver.get_tuple(head(thread_id))
    if saved is None:
        return []
    return log_of(saved.checkpoint.get("channel_values", {}).get("compaction"))


def task_threads(saver: BaseCheckpointSaver, thread_id: str, *, above: int) -> list[str]:
    """The saved threads of ``thread_id``'s ``task`` calls numbered above ``above``, nested
    ones included: numbered up to the thread's own count of calls, and on while there are more
    (a rewound thread counts fewer calls than it left threads)."""
    from dcode.agent.history_channel import thread_messages
    from dcode.agent.subagents.threads import task_calls, task_thread

    latest = saver.get_tuple(head(thread_id))
    messages = thread_messages(saver, latest) if latest is not None else None
    counted = task_calls(messages or [])
    found: list[str] = []
    number = above
    while True:
        number += 1
        child = task_thread(thread_id, number)
        if saver.get_tuple(head(child)) is None:
            if number > counted:
                return found
            continue
        found += [child, *task_threads(saver, child, above=0)]


def delete_session_threads(saver: BaseCheckpointSaver, session_id: str) -> None:
    """Delete the session's thread and its subagents' threads (``SESSION/task/N``, nested too)."""
    for thread in [session_id, *task_threads(saver, session_id, above=0)]:
        saver.delete_thread(thread)
