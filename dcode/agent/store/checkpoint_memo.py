"""The checkpointer, remembering what it read: a turn of a long session reads its thread once.

Rebuilding a thread's messages (``history_channel``) reads its latest snapshot, which holds the
whole history, then the checkpoints and writes since, and decodes all of them. A turn rebuilt
the thread three times (settling it before the turn, the graph's own load, the count after it),
and each turn of a session again: every turn decoded the whole history three times over, and a
turn of a long session cost several times one of a short session. Two memories make a turn's
cost independent of the history's length:

- ``RememberingSaver`` keeps each thread's latest rebuilt history by the checkpoint it was
  rebuilt for. The history of a checkpoint never changes once the checkpoint exists (LangGraph
  adds writes only to a head, and snapshots a channel instead of writing to a checkpoint that
  has children), so the same checkpoint's history is the same answer: the turn's second and
  third loads are the first's, and the next turn starts from the last one's. A checkpoint a
  few steps after the remembered one (the count after a turn, a turn after the last) has that
  history and the writes stored since: those few checkpoints are read, not the thread.
- ``RememberingSerializer`` keeps a large checkpoint's decoded value (a snapshot, or a whole
  list saved before the channel was a delta) under its stored bytes: a content key, with
  nothing to invalidate when a thread is rewound, forked or deleted. The one new load of a
  turn finds the snapshot decoded; what else it decodes (small checkpoints, the writes since
  the snapshot) is bounded by the snapshot cadence.

Each load gets its own containers (dicts, lists, tuples, sets: LangGraph updates what it
loaded in place) around the same leaf objects: the messages, which nothing changes in place
(``message_memo``), so a turn of a long session also finds their token counts and wire dicts
where the previous turn left them.
"""

# Any: LangGraph's serializer decodes to Any, and its checkpoint saver and serializer take untyped options

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, DeltaChannelHistory
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from dcode.agent.store.serde import SAFE_TYPES_ONLY

WALK = 64  # checkpoints walked up to a remembered history (a turn makes a few a step)
THREADS = 8  # threads whose latest history is kept (the session's, its subagents')
ENTRIES = 4  # decoded checkpoints kept
BUDGET = 64 * 2**20  # and at most this many bytes of theirs, as stored
SMALLEST = 16 * 2**10  # bytes: a smaller checkpoint decodes about as fast as its copy is made


class RememberingHistories(BaseCheckpointSaver[str]):
    """What any of LangGraph's checkpointers gains: a thread's history for the checkpoint it
    last rebuilt it for, answered from memory, and carried forward to a checkpoint after it.
    Listed before the checkpointer among the bases
    (``RememberingSaver``, ``postgres_saver.PostgresCheckpointer``)."""

    _histories: OrderedDict[
        tuple[str, str], tuple[str, tuple[str, ...], Mapping[str, DeltaChannelHistory]]
    ]

    def _start_remembering(self) -> None:
        self._histories = OrderedDict()

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        configurable = config.get("configurable", {})
        target = configurable.get("checkpoint_id")
        if not target:  # the thread's head, whichever it is now
            return await super().aget_delta_channel_history(config=config, channels=channels)
        thread = (str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", "")))
        wanted = tuple(channels)
        kept = self._histories.get(thread)
        if kept is None or kept[:2] != (target, wanted):
            carried = None if kept is None else await self._carried_forward(config, kept)
            kept = (
                target,
                wanted,
                carried
                if carried is not None
                else await super().aget_delta_channel_history(config=config, channels=channels),
            )
            self._histories[thread] = kept
            while len(self._histories) > THREADS:
                self._histories.popitem(last=False)
        self._histories.move_to_end(thread)
        return fresh_containers(kept[2])

    async def _carried_forward(
        self,
        config: RunnableConfig,
        kept: tuple[str, tuple[str, ...], Mapping[str, DeltaChannelHistory]],
    ) -> dict[str, DeltaChannelHistory] | None:
        """The history of ``config``'s checkpoint, from the remembered one of its ancestor a few
        checkpoints up (the previous turn's end, most often): that history, then the writes of
        the ancestor and of each checkpoint after it, read with ``aget_tuple`` as LangGraph's
        own walk reads them. None (read it all) when the ancestor is not within ``WALK``
        checkpoints, or a checkpoint on the way holds a value of a channel asked for: the
        history then starts from that value, not from the remembered one."""
        remembered, channels, history = kept
        target = await self.aget_tuple(config)
        cursor = target.parent_config if target is not None else None
        between: list[CheckpointTuple] = []  # the target's ancestors, nearest first
        for _ in range(WALK):
            step = await self.aget_tuple(cursor) if cursor is not None else None
            if step is None or any(ch in step.checkpoint["channel_values"] for ch in channels):
                return None
            between.append(step)
            if step.config["configurable"].get("checkpoint_id") == remembered:
                return {ch: _extended(history[ch], between, ch) for ch in channels}
            cursor = step.parent_config
        return None

    async def adelete_thread(self, thread_id: str) -> None:
        for thread in [key for key in self._histories if key[0] == str(thread_id)]:
            del self._histories[thread]
        await super().adelete_thread(thread_id)

    def with_allowlist(
        self, extra_allowlist: Collection[tuple[str, ...]]
    ) -> BaseCheckpointSaver[Any]:
        """LangGraph derives a saver for the graph's own types: one that decodes differently
        remembers on its own."""
        derived = super().with_allowlist(extra_allowlist)
        if derived is not self and isinstance(derived, RememberingHistories):
            derived._start_remembering()
        return derived


class RememberingSaver(RememberingHistories, AsyncSqliteSaver):
    """LangGraph's SQLite checkpointer, with ``RememberingSerializer`` by default, that answers
    a thread's history for the checkpoint it last rebuilt it for from memory."""

    def __init__(
        self, conn: aiosqlite.Connection, *, serde: SerializerProtocol | None = None
    ) -> None:
        super().__init__(conn, serde=serde or RememberingSerializer())
        self._start_remembering()


class RememberingSerializer(JsonPlusSerializer):
    """LangGraph's serializer (the checkpointer's default, with its settings), whose
    ``loads_typed`` answers a large checkpoint it decoded before from memory."""

    def __init__(self, *, entries: int = ENTRIES, budget: int = BUDGET, **options: Any) -> None:
        # JsonPlusSerializer's own options; safe types only unless told otherwise (store/serde.py)
        options.setdefault("allowed_msgpack_modules", SAFE_TYPES_ONLY)
        super().__init__(**options)
        self._memo = _Memo(entries, budget)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if not isinstance(blob, bytes) or len(blob) < SMALLEST:
            return super().loads_typed(data)
        key = (kind, blob)
        found = self._memo.get(key)
        if found is not _MISSING:
            return fresh_containers(found)
        value = super().loads_typed(data)
        if not _is_checkpoint(value):
            return value  # a write: a step's new messages, decoded again at the next load
        self._memo.put(key, value, len(blob))
        return fresh_containers(value)  # the remembered value itself is never handed out

    def with_msgpack_allowlist(
        self, extra_allowlist: Iterable[tuple[str, ...] | type]
    ) -> JsonPlusSerializer:
        """LangGraph derives a serializer for the graph's own types: one that may decode
        differently remembers on its own."""
        derived = super().with_msgpack_allowlist(extra_allowlist)
        if derived is not self and isinstance(derived, RememberingSerializer):
            derived._memo = _Memo(self._memo.entries, self._memo.budget)
        return derived

    @property
    def remembered(self) -> int:
        """How many decoded checkpoints are held."""
        return len(self._memo)


_MISSING = object()


def _extended(
    history: DeltaChannelHistory, between: Sequence[CheckpointTuple], channel: str
) -> DeltaChannelHistory:
    """``history`` (of the last of ``between``), with the writes to ``channel`` stored at each
    of ``between``, oldest first: the history of the checkpoint after the first of them."""
    writes = list(history["writes"])
    for step in reversed(between):
        writes.extend(write for write in step.pending_writes or () if write[1] == channel)
    extended: DeltaChannelHistory = {"writes": writes}
    if "seed" in history:
        extended["seed"] = history["seed"]
    return extended


def _is_checkpoint(value: object) -> bool:
    return isinstance(value, dict) and "channel_values" in value


class _Memo:
    """Values by key: the ``entries`` most recently used, within ``budget`` bytes of keys."""

    def __init__(self, entries: int, budget: int) -> None:
        self.entries = entries
        self.budget = budget
        self._kept: OrderedDict[tuple[str, bytes], tuple[object, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()  # the sync saver decodes in its caller's thread

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: tuple[str, bytes]) -> object:
        with self._lock:
            entry = self._kept.get(key)
            if entry is None:
                return _MISSING
            self._kept.move_to_end(key)
            return entry[0]

    def put(self, key: tuple[str, bytes], value: object, size: int) -> None:
        if size > self.budget:
            return
        with self._lock:
            if key in self._kept:
                return
            self._kept[key] = (value, size)
            self._size += size
            while len(self._kept) > self.entries or self._size > self.budget:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._size -= dropped


def fresh_containers(value: Any) -> Any:
    """``value`` with new dicts, lists, tuples and sets all the way down, around the same
    leaves (anything else: messages, strings, numbers, other objects). Whether an item is a
    container is tested inline: a history is thousands of messages, and a call for each would
    cost more than the copy."""
    kind = type(value)
    if kind is dict:
        return {
            key: fresh_containers(item)
            if type(item) in _RENEWED or isinstance(item, tuple)
            else item
            for key, item in value.items()
        }
    if kind is list:
        return [
            fresh_containers(item) if type(item) in _RENEWED or isinstance(item, tuple) else item
            for item in value
        ]
    if kind is set:
        return {
            fresh_containers(item) if type(item) in _RENEWED or isinstance(item, tuple) else item
            for item in value
        }
    if isinstance(value, tuple):  # a NamedTuple too (a channel's snapshot)
        items = (
            fresh_containers(item) if type(item) in _RENEWED or isinstance(item, tuple) else item
            for item in value
        )
        return kind(*items) if hasattr(value, "_fields") else kind(items)
    return value


_RENEWED = frozenset({dict, list, set})
