"""The thread's messages, stored as deltas: a checkpoint holds what changed, not the history.

LangGraph's SQLite checkpointer writes every channel's whole value into every checkpoint, and
the agent loop makes one checkpoint per node (the hooks before the model, the model, the
tools: three a step, ``middleware.sequence``; seven before). With the default channel
each of them serialized and stored the whole history again, so a step's cost grew with the
history, and a session's file with its square (37 MB after 100 messages of 3 KB tool results).
The graph's ``messages`` are therefore a LangGraph ``DeltaChannel`` (``history_state.py``): a
checkpoint keeps no value for it, the new messages are saved once as the step's writes (as they
always were), and the channel is rebuilt by folding the writes since its last full snapshot,
taken every ``SNAPSHOT_EVERY`` updates.

``fold_messages`` is that channel's reducer, for the live run and for every rebuild, so a
resumed thread is the thread the run had. It merges as langgraph's ``add_messages`` does
(``tests/test_history_channel.py`` holds it to that): by id, a message with a known id
replacing the old one in place, ``RemoveMessage`` removing one (an unknown id is an error),
``REMOVE_ALL_MESSAGES`` starting over. A fold over the writes is batching-invariant, as
``DeltaChannel`` requires. A thread saved before (a whole list in each checkpoint) is read as
it is.

``thread_messages`` rebuilds the messages of a checkpoint a store reads through its saver's
API (``SessionStore.read_thread``), which paints a resumed transcript before the engine loads: this module
imports only langchain-core's messages and, for a snapshot, the checkpointer's own types.
"""

# Any: LangGraph's DeltaChannel hands its reducer untyped writes (a message, a list, a dict), and the checkpoint tuple comes from whichever saver

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)

from dcode.models.langchain_internals import delta_snapshot_value

MESSAGES = "messages"
SNAPSHOT_EVERY = 100  # updates of the channel (two or three a step) between full snapshots
REMOVE_ALL = (
    "__remove_all__"  # langgraph's REMOVE_ALL_MESSAGES (tests/test_history_channel.py pins it)
)


def _as_messages(value: Any) -> list[BaseMessage]:
    items = value if isinstance(value, list) else [value]
    out = []
    for message in convert_to_messages(items):
        if isinstance(message, BaseMessageChunk):
            message = message_chunk_to_message(message)
        if message.id is None:
            message.id = str(uuid.uuid4())  # as add_messages; a saved write already has its id
        out.append(message)
    return out


def merge_messages(state: Sequence[Any], write: Any) -> list[AnyMessage]:
    """One write (a message or a list of them) merged into ``state``, as ``add_messages``."""
    return fold_messages(state, [write])


def fold_messages(state: Sequence[Any], writes: Sequence[Any]) -> list[AnyMessage]:
    """The ``DeltaChannel`` reducer: each write merged in turn.

    A rebuild folds up to a snapshot's worth of writes into the whole history, so the index of
    ids is built once for the fold and kept up to date, not built again for each write (which
    made a rebuild cost the history's length times the writes'). A live run folds each step's
    writes into the previous fold's result: that result's index is carried over (copied, as the
    list is: a channel's value is never changed once handed out), so a step does not hash the
    whole history again."""
    carried = _FOLDS.index_of(state)
    if carried is not None:
        merged: list[Any] = list(state)
        where = dict(carried)
    else:
        # The state is a fold's result (or a list add_messages made, saved before): messages
        # with ids already, which need no second pass (it would cost a walk of the history).
        merged = (
            list(state)
            if state and isinstance(state[0], BaseMessage)
            else _as_messages(list(state))
        )
        where = {message.id: index for index, message in enumerate(merged)}
    for write in writes:
        merged = _merge(merged, where, _as_messages(write))
    _FOLDS.remember(merged, where)
    return merged


class _RecentFolds:
    """The index of ids of the last few fold results, by the result itself (held, so that its
    ``id`` cannot pass to another list while it is here). A result changed in place after all
    (its length or its ends no longer match the index) is indexed again, not trusted."""

    KEPT = 4

    def __init__(self) -> None:
        self._kept: list[tuple[list[Any], dict[Any, int]]] = []

    def index_of(self, state: Sequence[Any]) -> dict[Any, int] | None:
        for result, where in self._kept:
            if result is state:
                return where if _still_matches(result, where) else None
        return None

    def remember(self, result: list[Any], where: dict[Any, int]) -> None:
        self._kept = [(result, where), *self._kept[: self.KEPT - 1]]


def _still_matches(result: list[Any], where: dict[Any, int]) -> bool:
    if len(where) != len(result):
        return False
    return not result or (
        where.get(result[0].id) == 0 and where.get(result[-1].id) == len(result) - 1
    )


_FOLDS = _RecentFolds()


def _merge(merged: list[Any], where: dict[Any, int], new: list[BaseMessage]) -> list[Any]:
    """``new`` merged into ``merged`` (changed in place, or a new list), keeping ``where``
    (each id's index in the result) true."""
    for index in range(len(new) - 1, -1, -1):
        if isinstance(new[index], RemoveMessage) and new[index].id == REMOVE_ALL:
            return _reindexed(new[index + 1 :], where)  # what follows the marker, as it is
    removed: set[str | None] = set()
    for message in new:
        at = where.get(message.id)
        if at is None:
            if isinstance(message, RemoveMessage):
                raise ValueError(
                    f"Attempting to delete a message with an ID that doesn't exist ('{message.id}')"
                )
            where[message.id] = len(merged)
            merged.append(message)
        elif isinstance(message, RemoveMessage):
            removed.add(message.id)
        else:
            removed.discard(message.id)
            merged[at] = message
    if not removed:
        return merged
    return _reindexed([message for message in merged if message.id not in removed], where)


def _reindexed(messages: list[Any], where: dict[Any, int]) -> list[Any]:
    where.clear()
    where.update((message.id, index) for index, message in enumerate(messages))
    return messages


def thread_messages(saver: Any, saved: Any) -> list[AnyMessage] | None:
    """The messages of checkpoint tuple ``saved`` (from ``saver.get_tuple``), rebuilt from its
    ancestors' writes when it holds no snapshot of them; None when the thread has none."""
    checkpoint = saved.checkpoint
    if MESSAGES not in checkpoint.get("channel_versions", {}):
        return None
    stored = checkpoint.get("channel_values", {})
    if MESSAGES in stored:  # a snapshot, or a whole list saved before the channel was a delta
        value = delta_snapshot_value(stored[MESSAGES])
        return list(value) if isinstance(value, list) else None
    history = saver.get_delta_channel_history(config=saved.config, channels=[MESSAGES])[MESSAGES]
    seed = delta_snapshot_value(history.get("seed"))
    values = [value for _task, _channel, value in history.get("writes", [])]
    return fold_messages(seed if isinstance(seed, list) else [], values)
