"""The default store: everything in ``$DCODE_HOME/sessions.db``, one SQLite file.

dcode's own tables (``dcode_sessions``, ``dcode_turns``, ``dcode_file_changes``) sit beside
LangGraph's SQLite checkpointer's, whose tables this module never queries: threads are read and
deleted through ``SqliteSaver``'s public API. The record methods use the standard library and a
connection per unit of work, so ``dcode sessions list`` stays instant; the graph's checkpointer
(``open_checkpointer``) is LangGraph's async one on a connection of its own.

The one-process-per-session guarantee is a file lock (``file_lock``), which the kernel drops
with its process however it ends. A file written by an earlier dcode is read as it is; columns
added since are added when a writer opens it.
"""

# Any: the compaction log is read from LangGraph checkpoint values, untyped

from __future__ import annotations

import asyncio
import builtins
import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dcode.agent.rewind.blobs import FILE_HISTORY_DIR, BlobStore
from dcode.agent.store import threads
from dcode.agent.store.base import (
    SavedThread,
    SessionDatabaseError,
    SessionHold,
)
from dcode.agent.store.file_lock import SessionLock
from dcode.agent.store.serde import safe_serde
from dcode.agent.store.sql_records import SqlRecords
from dcode.agent.store.sqlite_file import (
    async_database_errors,
    check_database,
    connect,
    database_error,
    database_errors,
    is_file_error,
    known_damage,
    log_kept_out,
    refusal_for,
)
from dcode.settings.private_files import ensure_private_file

if TYPE_CHECKING:
    import aiosqlite
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from dcode.agent.store.sqlite_saver import CheckedSaver

PRUNED_MARKER = "pruned"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS dcode_sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    model TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    context_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    subagent_input_tokens INTEGER NOT NULL DEFAULT 0,
    subagent_output_tokens INTEGER NOT NULL DEFAULT 0,
    subagent_cached_tokens INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS dcode_sessions_updated ON dcode_sessions(updated DESC);
CREATE TABLE IF NOT EXISTS dcode_turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    prompt TEXT NOT NULL,
    started REAL NOT NULL,
    checkpoint_id TEXT,
    change_mark INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS dcode_turns_session ON dcode_turns(session_id, id);
CREATE TABLE IF NOT EXISTS dcode_file_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    before_sha TEXT,
    kept INTEGER NOT NULL,
    after_sha TEXT,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS dcode_file_changes_session ON dcode_file_changes(session_id, id);
CREATE TABLE IF NOT EXISTS dcode_usage (
    session_id TEXT NOT NULL,
    model TEXT NOT NULL,
    agent TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    priced INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, model, agent)
);
"""

# Columns added since the first schema, with their definitions: a table made before them gains
# them when a writer opens it (a read-only store reads the dataclass's default instead).
_ADDED_COLUMNS = dict.fromkeys(
    ("cached_tokens", "subagent_input_tokens", "subagent_output_tokens", "subagent_cached_tokens"),
    "INTEGER NOT NULL DEFAULT 0",
)
_CHECKPOINT_TABLES = ("checkpoints", "writes")
"""The checkpointer's tables, only ever looked for (a file without them has no thread yet)."""


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    present = {row[1] for row in conn.execute("PRAGMA table_info(dcode_sessions)")}
    for name, definition in _ADDED_COLUMNS.items():
        if name not in present:
            conn.execute(f"ALTER TABLE dcode_sessions ADD COLUMN {name} {definition}")


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


class _SqliteUnit:
    """A ``Unit`` on one of ``sqlite3``'s connections (its rows ``sqlite3.Row``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, params: Sequence[object] = ()) -> builtins.list[dict[str, Any]]:
        return [dict(row) for row in self.conn.execute(sql, params)]

    def run(self, sql: str, params: Sequence[object] = ()) -> None:
        self.conn.execute(sql, params)

    def run_many(self, sql: str, params: Iterable[Sequence[object]]) -> None:
        self.conn.executemany(sql, params)

    def insert(self, sql: str, params: Sequence[object]) -> int:
        return int(self.conn.execute(sql, params).lastrowid or 0)


class SqliteStore(SqlRecords):
    def __init__(self, db_path: Path, home: Path, *, read_only: bool = False) -> None:
        self.db_path = db_path
        self.home = home
        self.read_only = read_only
        self.blobs = BlobStore(home / FILE_HISTORY_DIR)
        self._conn: aiosqlite.Connection | None = None

    @property
    def location(self) -> str:
        return str(self.db_path)

    def _connect(self) -> AbstractContextManager[sqlite3.Connection]:
        return connect(
            self.db_path, _SCHEMA, read_only=self.read_only, migrate=_add_missing_columns
        )

    @contextmanager
    def _unit(self) -> Iterator[_SqliteUnit]:
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            yield _SqliteUnit(conn)

    def _readable(self, *, turns: bool = False, usage: bool = False) -> bool:
        if not self.db_path.exists():
            return False
        if not (turns or usage) or not self.read_only:  # a writer makes the tables it lacks
            return True
        with self._connect() as conn:
            tables = _tables(conn)
        return (not turns or "dcode_turns" in tables) and (not usage or "dcode_usage" in tables)

    def _delete_threads(self, session_id: str) -> None:
        with self._saver(write=True) as saver:
            if saver is not None:
                threads.delete_session_threads(saver, session_id)

    def check(self) -> int | None:
        if not self.db_path.exists():
            return None
        with self._connect() as conn:
            return int(conn.execute("SELECT count(*) FROM dcode_sessions").fetchone()[0])

    # -- threads ------------------------------------------------------------------------------

    async def open_checkpointer(self) -> BaseCheckpointSaver:
        import aiosqlite

        from dcode.agent.store.sqlite_saver import CheckedSaver

        # Before the first write of the run (the checkpointer's setup creates tables).
        await asyncio.to_thread(check_database, self.db_path)
        ensure_private_file(self.db_path)  # SQLite gives its -wal and -shm files this mode
        conn = await aiosqlite.connect(str(self.db_path), timeout=10)
        try:
            async with async_database_errors(self.db_path):
                await conn.execute("PRAGMA journal_mode=WAL")
                saver: CheckedSaver = CheckedSaver(conn, self.db_path)
                await saver.setup()
        except BaseException:
            # The connection's worker thread is not a daemon: left running, it would keep the
            # process alive after everything else has ended. Waiting for it to stop lets it
            # hand back its last result before the loop closes.
            stopped = conn.stop()
            if stopped is not None:
                await asyncio.wait([stopped], timeout=2.0)
            raise
        self._conn = conn
        return saver

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        damaged = known_damage(self.db_path) is not None
        if damaged:
            with log_kept_out(self.db_path):  # a damaged file stays as it is
                await conn.close()
        else:
            await conn.close()

    def close(self) -> None:
        """Nothing to let go: each record call opens and closes its own connection."""

    @contextmanager
    def _saver(self, *, write: bool = False) -> Iterator[SqliteSaver | None]:
        """LangGraph's sync saver on a connection of its own; None when the file has no
        checkpoints yet (the saver would create its tables)."""
        from langgraph.checkpoint.sqlite import SqliteSaver

        if not self.db_path.is_file():
            yield None
            return
        if write:
            check_database(self.db_path)
            conn = sqlite3.connect(self.db_path, timeout=10, check_same_thread=False)
        else:
            conn = sqlite3.connect(
                f"{self.db_path.resolve().as_uri()}?mode=ro",
                uri=True,
                timeout=1,
                check_same_thread=False,
            )
        with closing(conn), database_errors(self.db_path):
            missing = [table for table in _CHECKPOINT_TABLES if table not in _tables(conn)]
            if len(missing) == len(_CHECKPOINT_TABLES):
                yield None  # no checkpoint was ever saved here
                return
            if missing:  # half the checkpointer's tables: the saver would try to recreate them
                raise database_error(self.db_path, f"no {' or '.join(missing)} table", damaged=True)
            yield SqliteSaver(conn, serde=safe_serde())

    def read_thread(self, thread_id: str, *, strict: bool = False) -> SavedThread | None:
        try:
            with self._saver() as saver:
                return None if saver is None else threads.saved_thread(saver, thread_id)
        except Exception:
            if strict:
                raise
            return None

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        try:
            with self._saver() as saver:
                return None if saver is None else threads.latest_id(saver, thread_id)
        except (sqlite3.Error, SessionDatabaseError):
            return None

    def compaction_log(self, thread_id: str) -> builtins.list[dict[str, Any]]:
        try:
            with self._saver() as saver:
                return [] if saver is None else threads.compaction_log(saver, thread_id)
        except Exception:  # noqa: BLE001 - the transcript is shown without those lines
            return []

    def task_threads(self, session_id: str, *, above: int = 0) -> builtins.list[str]:
        with self._saver() as saver:
            return [] if saver is None else threads.task_threads(saver, session_id, above=above)

    # -- one process per session, and failures ------------------------------------------------

    def hold(self, session_id: str) -> SessionHold:
        return SessionLock.acquire(self.home, session_id)

    def known_damage(self) -> SessionDatabaseError | None:
        return known_damage(self.db_path)

    def refusal(self, error: BaseException) -> SessionDatabaseError | None:
        seen: set[int] = set()
        link: BaseException | None = error
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            match link:
                case SessionDatabaseError():
                    return link
                case sqlite3.Error() if is_file_error(link):
                    return refusal_for(self.db_path, link)
            link = link.__cause__ or link.__context__
        return None

    @asynccontextmanager
    async def errors(self) -> AsyncIterator[None]:
        async with async_database_errors(self.db_path):
            yield
