"""Sessions in a PostgreSQL server a team (or one user's machines) share: ``DCODE_DATABASE_URL``
or ``database_url`` in the user's config, with ``dcode[postgres]`` installed.

dcode's tables (``postgres_server.MIGRATIONS``) sit beside those of LangGraph's Postgres
checkpointer, which this module never queries: threads are read and deleted through
``PostgresSaver``'s public API on the record methods' pool, and the graph runs on
``AsyncPostgresSaver`` with a pool of its own (``postgres_saver``). The record methods block,
as the SQLite store's do, on a psycopg ``ConnectionPool`` opened at their first call; a
connection the server dropped is replaced before it is used.

One process per session is an advisory lock (``postgres_hold``). The files beside the store
(changed files' kept contents, attachments, archives) stay under ``$DCODE_HOME``, per machine.
Nothing of this store is ever "damaged" the way a SQLite file is: the server keeps its data
whole, and what fails is reaching it, which every call says in one line naming the server.
"""

# Any: the compaction log is read from LangGraph checkpoint values, untyped

from __future__ import annotations

import builtins
import functools
import threading
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from dcode.agent.rewind.blobs import FILE_HISTORY_DIR, BlobStore
from dcode.agent.store import threads
from dcode.agent.store.base import (
    SavedThread,
    SessionDatabaseError,
    SessionHold,
)
from dcode.agent.store.postgres_hold import AdvisoryHold
from dcode.agent.store.postgres_server import (
    CONNECTION,
    DCODE_TABLES,
    SessionPool,
    async_server_errors,
    connect,
    dcode_tables,
    has_schema,
    migrate,
    refusal,
    server_errors,
)
from dcode.agent.store.serde import safe_serde
from dcode.agent.store.sql_records import SqlRecords
from dcode.settings.database import database_location

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import AsyncConnection

POOL_SIZE = 3  # the engine's threads (a turn, its subagents, the screen's reads) at once
WAIT = 10.0  # seconds a call waits for a connection before it says the server is out of reach

Conn = psycopg.Connection[DictRow]


class _PostgresUnit:
    """A ``Unit`` on one of psycopg's connections: ``?`` becomes ``%s``, an INSERT returns
    its row's id."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def rows(self, sql: str, params: Sequence[object] = ()) -> builtins.list[dict[str, Any]]:
        return self.conn.execute(_placeholders(sql), params).fetchall()

    def run(self, sql: str, params: Sequence[object] = ()) -> None:
        self.conn.execute(_placeholders(sql), params)

    def run_many(self, sql: str, params: Iterable[Sequence[object]]) -> None:
        self.conn.cursor().executemany(_placeholders(sql), params)

    def insert(self, sql: str, params: Sequence[object]) -> int:
        row = self.conn.execute(_placeholders(sql + " RETURNING id"), params).fetchone()
        assert row is not None
        return int(row["id"])


@functools.lru_cache(maxsize=64)
def _placeholders(sql: str) -> str:
    """``sql`` with psycopg's ``%s`` for each ``?`` (no statement here has a ``?`` or a ``%``
    of its own)."""
    return sql.replace("?", "%s")


class PostgresStore(SqlRecords):
    LIKE = "ILIKE"

    def __init__(self, url: str, home: Path, *, read_only: bool = False) -> None:
        self.url = url
        self.home = home
        self.read_only = read_only
        self.blobs = BlobStore(home / FILE_HISTORY_DIR)
        self._pool: ConnectionPool[Conn] | None = None
        self._pool_lock = threading.Lock()
        self._tables: frozenset[str] = frozenset()  # dcode's tables known to be there
        self._async_pool: AsyncConnectionPool[AsyncConnection[DictRow]] | None = None

    @property
    def location(self) -> str:
        return database_location(self.url)

    # -- connections ------------------------------------------------------------------------

    def _ready(self) -> bool:
        """Whether dcode's tables are there: a writer makes them (``migrate``, once per process)
        and opens its pool; a reader only looks. Connection errors become the store's line."""
        return "dcode_sessions" in self._present()

    def _present(self) -> frozenset[str]:
        """dcode's tables on the server: all of them once this process has migrated it; a
        reader only looks, and finds those of the dcode that set the server up."""
        if self._tables:
            return self._tables
        if not self.read_only:
            migrate(self.url)
            self._tables = DCODE_TABLES
            return self._tables
        with connect(self.url) as conn, server_errors(self.url):
            self._tables = dcode_tables(conn)
        return self._tables

    def _open_pool(self) -> ConnectionPool[Conn]:
        with self._pool_lock:
            if self._pool is None:
                pool = SessionPool(
                    self.url,
                    min_size=1,
                    max_size=POOL_SIZE,
                    kwargs=dict(CONNECTION),
                    check=ConnectionPool.check_connection,
                    timeout=WAIT,
                    open=False,
                    name="dcode-sessions",
                    num_workers=1,
                )
                pool.open(wait=False)
                self._pool = pool
                # A store nobody closes (``dcode sessions show`` opens one for a read) closes
                # its pool when it goes, in the thread that let it go: the pool's own clean-up
                # may run in its worker, which cannot wait for itself.
                weakref.finalize(self, pool.close)
            return self._pool

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        """A connection for one unit of work; what fails on the way is the store's line."""
        with server_errors(self.url), self._open_pool().connection() as conn:
            yield conn

    @contextmanager
    def _unit(self) -> Iterator[_PostgresUnit]:
        self._ready()
        with self._connection() as conn, conn.transaction():
            yield _PostgresUnit(conn)

    def _readable(self, *, turns: bool = False, usage: bool = False) -> bool:
        present = self._present()
        return (
            "dcode_sessions" in present
            and (not turns or "dcode_turns" in present)
            and (not usage or "dcode_usage" in present)
        )

    def _delete_threads(self, session_id: str) -> None:
        with self._saver() as saver:
            threads.delete_session_threads(saver, session_id)

    def check(self) -> int | None:
        """On a connection of its own, making nothing: a server nobody saved to says None."""
        with connect(self.url) as conn, server_errors(self.url):
            if not has_schema(conn):
                return None
            row = conn.execute("SELECT count(*) AS n FROM dcode_sessions").fetchone()
        return int(row["n"]) if row else 0

    # -- threads ------------------------------------------------------------------------------

    async def open_checkpointer(self) -> BaseCheckpointSaver:
        import asyncio

        from dcode.agent.store.postgres_saver import PostgresCheckpointer, async_pool

        await asyncio.to_thread(self._ready)  # connects (or says why not) and migrates
        pool = async_pool(self.url)
        async with async_server_errors(self.url):
            try:
                await pool.open(wait=True, timeout=WAIT)
            except BaseException:
                await pool.close()
                raise
        self._async_pool = pool
        return PostgresCheckpointer(pool)

    async def aclose(self) -> None:
        pool, self._async_pool = self._async_pool, None
        if pool is not None:
            await pool.close()
        self.close()

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    @contextmanager
    def _saver(self) -> Iterator[PostgresSaver]:
        """LangGraph's sync saver on the record methods' pool (its tables are there once the
        store is ready)."""
        from langgraph.checkpoint.postgres import PostgresSaver

        self._ready()
        with server_errors(self.url):
            yield PostgresSaver(self._open_pool(), serde=safe_serde())

    def read_thread(self, thread_id: str, *, strict: bool = False) -> SavedThread | None:
        try:
            if not self._ready():
                return None
            with self._saver() as saver:
                return threads.saved_thread(saver, thread_id)
        except Exception:
            if strict:
                raise
            return None

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        try:
            if not self._ready():
                return None
            with self._saver() as saver:
                return threads.latest_id(saver, thread_id)
        except SessionDatabaseError:
            return None

    def compaction_log(self, thread_id: str) -> builtins.list[dict[str, Any]]:
        try:
            if not self._ready():
                return []
            with self._saver() as saver:
                return threads.compaction_log(saver, thread_id)
        except Exception:  # noqa: BLE001 - the transcript is shown without those lines
            return []

    def task_threads(self, session_id: str, *, above: int = 0) -> builtins.list[str]:
        if not self._ready():
            return []
        with self._saver() as saver:
            return threads.task_threads(saver, session_id, above=above)

    # -- one process per session, and failures ------------------------------------------------

    def hold(self, session_id: str) -> SessionHold:
        return AdvisoryHold.acquire(self.url, session_id)

    def known_damage(self) -> SessionDatabaseError | None:
        return None  # the server keeps its data whole; reaching it is what fails

    def refusal(self, error: BaseException) -> SessionDatabaseError | None:
        return refusal(self.url, error)

    @asynccontextmanager
    async def errors(self) -> AsyncIterator[None]:
        async with async_server_errors(self.url):
            yield
