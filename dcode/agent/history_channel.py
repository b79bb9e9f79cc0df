"""The thread's messages as a LangGraph ``DeltaChannel``: a checkpoint stores what changed.

LangGraph's SQLite checkpointer writes every channel's whole value into every checkpoint, and
the agent loop makes one checkpoint per node (the model, the tools, each before-model hook):
about seven a step. With the default channel each of them serialized and stored the whole
history again, so a step's cost grew with the history, and a session's file with its square
(37 MB after 100 messages of 3 KB tool results). A ``DeltaChannel`` keeps only a marker in the
checkpoint; the new messages are already saved once, as the step's writes, and the channel is
rebuilt by folding the writes since its last full snapshot (every ``SNAPSHOT_EVERY`` updates).

The reducer is langgraph's public ``add_messages``, folded over the writes one at a time, so a
rebuilt thread is exactly the thread the live run had (same merge by id, same removals), and a
fold is batching-invariant as ``DeltaChannel`` requires. A thread saved before this channel
(whole lists in its checkpoints) is read as it is: ``from_checkpoint`` takes a plain value.

``thread_messages`` rebuilds the messages of a checkpoint read straight from the database,
for ``saved_thread`` (which paints a resumed transcript before the engine is loaded).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from langchain.agents.middleware import AgentState
from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel
from langgraph.graph.message import add_messages
from typing_extensions import Required

MESSAGES = "messages"
SNAPSHOT_EVERY = 100  # updates of the channel (two or three a step) between full snapshots


def fold_messages(state: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """``add_messages`` applied to each write in turn."""
    for write in writes:
        state = add_messages(state, write)
    return state


def history_channel() -> DeltaChannel:
    return DeltaChannel(fold_messages, list, snapshot_frequency=SNAPSHOT_EVERY)


class HistoryState(AgentState[Any]):
    """The agent's state with its messages in a ``DeltaChannel`` (``create_agent``'s
    ``state_schema``: it wins over ``AgentState``'s ``add_messages`` channel)."""

    messages: Required[Annotated[list[AnyMessage], history_channel()]]  # type: ignore[misc]


def thread_messages(saver: Any, saved: Any) -> list[AnyMessage] | None:
    """The messages of checkpoint tuple ``saved`` (from ``saver.get_tuple``), rebuilt from its
    ancestors' writes when the checkpoint holds no snapshot of them; None when it has none."""
    values = saved.checkpoint.get("channel_values", {})
    if MESSAGES not in saved.checkpoint.get("channel_versions", {}):
        return None
    channel = history_channel()
    if MESSAGES in values:  # a snapshot, or a whole list saved before the channel was a delta
        rebuilt = channel.from_checkpoint(values[MESSAGES])
    else:
        history = saver.get_delta_channel_history(config=saved.config, channels=[MESSAGES])[MESSAGES]
        rebuilt = channel.from_checkpoint(history.get("seed"))
        rebuilt.replay_writes(history.get("writes", []))
    value = rebuilt.get() if rebuilt.is_available() else None
    return list(value) if isinstance(value, list) else None
