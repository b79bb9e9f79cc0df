"""LangGraph's PostgreSQL checkpointer as the graph runs on it: on an async connection pool,
remembering what it read (``checkpoint_memo``), as the SQLite store's does.

A connection the server dropped between two steps (a restart, ``pg_terminate_backend``, a
network blip) fails the next read or write on it, and the pool throws it away. That read or
write is tried once more, on a new connection: LangGraph's writes are upserts, so a write
that had reached the server before the connection went is written again unchanged. Checking
each connection as the pool hands it out would do the same for a query per call, which cost a
quarter of a turn's time in the store (``scripts/bench/session_store.py``). A second failure,
or a server that cannot be reached, fails the turn with the store's line; what was saved
before it stays, and the session resumes from there.
"""

# Any: LangGraph's saver API takes untyped channel writes and coroutines

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncConnection
from psycopg.rows import DictRow
from psycopg_pool import AsyncConnectionPool

from dcode.agent.store.checkpoint_memo import RememberingHistories, RememberingSerializer
from dcode.agent.store.postgres_server import (
    COMPRESSION,
    CONNECTION,
    CheckpointPool,
    with_settings,
)

POOL_SIZE = 2  # the saver runs one query at a time (its lock); one more while one is replaced
WAIT = 10.0  # seconds a step waits for a connection before the server is said out of reach
T = TypeVar("T")


def connection_lost(error: BaseException) -> bool:
    """The connection went (the server ended it, or the network), as opposed to the server
    refusing what was asked: no SQLSTATE, a connection exception (08), or an operator's
    intervention (57P01 to 57P03: shut down, crashed, cannot connect now)."""
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = error.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


async def once_more(step: Callable[[], Awaitable[T]]) -> T:
    """``step``, tried again on a new connection if its connection was lost."""
    try:
        return await step()
    except psycopg.OperationalError as exc:
        if not connection_lost(exc):
            raise
    return await step()


class PostgresCheckpointer(RememberingHistories, AsyncPostgresSaver):
    def __init__(self, pool: AsyncConnectionPool[AsyncConnection[DictRow]]) -> None:
        super().__init__(pool, serde=RememberingSerializer())
        self._start_remembering()

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        put = super().aput
        return await once_more(lambda: put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        put = super().aput_writes
        await once_more(lambda: put(config, writes, task_id, task_path))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        get = super().aget_tuple
        return await once_more(lambda: get(config))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        get = super().aget_delta_channel_history
        return await once_more(lambda: get(config=config, channels=channels))


def async_pool(url: str) -> CheckpointPool:
    """The checkpointer's pool, not opened yet."""
    return CheckpointPool(
        url,
        with_settings(url, COMPRESSION),
        min_size=1,
        max_size=POOL_SIZE,
        kwargs=dict(CONNECTION),
        timeout=WAIT,
        open=False,
        name="dcode-checkpoints",
    )
