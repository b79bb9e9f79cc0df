"""LangGraph's PostgreSQL checkpointer as the graph runs on it: on an async connection pool,
remembering what it read (``checkpoint_memo``), as the SQLite store's does.

Each read or write takes a connection from the pool, which checks it first: a connection the
server dropped between two steps (a restart, ``pg_terminate_backend``, a network blip) is
replaced, and the step goes on. A step whose own write is cut off fails the turn with the
store's line; what was saved before it stays, and the session resumes from there.
"""

from __future__ import annotations

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncConnection
from psycopg.rows import DictRow
from psycopg_pool import AsyncConnectionPool

from dcode.agent.store.checkpoint_memo import RememberingHistories, RememberingSerializer
from dcode.agent.store.postgres_server import CONNECTION

POOL_SIZE = 2  # the saver runs one query at a time (its lock); one more while one is replaced
WAIT = 10.0  # seconds a step waits for a connection before the server is said out of reach


class PostgresCheckpointer(RememberingHistories, AsyncPostgresSaver):
    def __init__(self, pool: AsyncConnectionPool[AsyncConnection[DictRow]]) -> None:
        super().__init__(pool, serde=RememberingSerializer())
        self._start_remembering()


def async_pool(url: str) -> AsyncConnectionPool[AsyncConnection[DictRow]]:
    """The checkpointer's pool, not opened yet."""
    return AsyncConnectionPool(
        url,
        min_size=1,
        max_size=POOL_SIZE,
        kwargs=dict(CONNECTION),
        check=AsyncConnectionPool.check_connection,
        timeout=WAIT,
        open=False,
        name="dcode-checkpoints",
    )
