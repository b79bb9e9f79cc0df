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
import dataclasses
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from dcode.agent.rewind.blobs import FILE_HISTORY_DIR, MAX_BLOB_BYTES, BlobStore, current_hash
from dcode.agent.store import threads
from dcode.agent.store.base import (
    DAY_SECONDS,
    KEEP_DAYS,
    ChangeRecord,
    FileChange,
    SavedThread,
    SessionDatabaseError,
    SessionHold,
    SessionInfo,
    SessionRecords,
    SessionStore,
    Turn,
    TurnRecord,
    clipped_prompt,
    files_changed,
    moved_mark,
    title_from_prompt,
)
from dcode.agent.store.postgres_hold import AdvisoryHold
from dcode.agent.store.postgres_server import (
    CONNECTION,
    async_server_errors,
    connect,
    has_schema,
    migrate,
    refusal,
    server_errors,
)
from dcode.agent.store.serde import safe_serde
from dcode.regular_files import NotRegularFile, open_regular
from dcode.settings.database import database_location
from dcode.settings.private_files import write_private

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import AsyncConnection

PRUNED_MARKER = "pruned"
POOL_SIZE = 3  # the engine's threads (a turn, its subagents, the screen's reads) at once
WAIT = 10.0  # seconds a call waits for a connection before it says the server is out of reach

Conn = psycopg.Connection[DictRow]


class PostgresStore(SessionStore):
    def __init__(self, url: str, home: Path, *, read_only: bool = False) -> None:
        self.url = url
        self.home = home
        self.read_only = read_only
        self.blobs = BlobStore(home / FILE_HISTORY_DIR)
        self._pool: ConnectionPool[Conn] | None = None
        self._pool_lock = threading.Lock()
        self._schema = False  # dcode's tables are known to be there
        self._async_pool: AsyncConnectionPool[AsyncConnection[DictRow]] | None = None

    @property
    def location(self) -> str:
        return database_location(self.url)

    # -- connections ------------------------------------------------------------------------

    def _ready(self) -> bool:
        """Whether dcode's tables are there: a writer makes them (``migrate``, once per process)
        and opens its pool; a reader only looks. Connection errors become the store's line."""
        if self._schema:
            return True
        if not self.read_only:
            migrate(self.url)
            self._schema = True
            return True
        with connect(self.url) as conn, server_errors(self.url):
            self._schema = has_schema(conn)
        return self._schema

    def _open_pool(self) -> ConnectionPool[Conn]:
        with self._pool_lock:
            if self._pool is None:
                pool: ConnectionPool[Conn] = ConnectionPool(
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

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> builtins.list[dict[str, Any]]:
        if not self._ready():
            return []
        with self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._ready()
        with self._connection() as conn:
            conn.execute(sql, params)

    # -- the session list ------------------------------------------------------------------

    def create(self, session_id: str, cwd: Path, model: str) -> SessionInfo:
        now = time.time()
        self._run(
            "INSERT INTO dcode_sessions (id, cwd, model, created, updated) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
            (session_id, str(cwd), model, now, now),
        )
        info = self.get(session_id)
        assert info is not None
        return info

    def fork(self, source: SessionInfo, session_id: str, *, message_count: int) -> SessionInfo:
        now = time.time()
        self._run(
            """INSERT INTO dcode_sessions (id, cwd, model, title, created, updated, message_count, context_tokens)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s)""",
            (
                session_id,
                source.cwd,
                source.model,
                source.title,
                now,
                now,
                message_count,
                source.context_tokens,
            ),
        )
        info = self.get(session_id)
        assert info is not None
        return info

    def start_turn(self, session_id: str, *, prompt: str, message_count: int) -> None:
        self._run(
            """UPDATE dcode_sessions SET
                   title = CASE WHEN title = '' THEN %s ELSE title END, updated = %s, message_count = %s
               WHERE id = %s""",
            (title_from_prompt(prompt), time.time(), message_count, session_id),
        )

    def record_turn(
        self,
        session_id: str,
        *,
        prompt: str,
        model: str,
        message_count: int,
        input_tokens: int,
        output_tokens: int,
        context_tokens: int,
        cached_tokens: int = 0,
        subagent_tokens: tuple[int, int, int] = (0, 0, 0),
    ) -> None:
        self._run(
            """UPDATE dcode_sessions SET
                   title = CASE WHEN title = '' THEN %s ELSE title END,
                   model = %s, updated = %s, message_count = %s,
                   input_tokens = input_tokens + %s, output_tokens = output_tokens + %s,
                   cached_tokens = cached_tokens + %s,
                   subagent_input_tokens = subagent_input_tokens + %s,
                   subagent_output_tokens = subagent_output_tokens + %s,
                   subagent_cached_tokens = subagent_cached_tokens + %s,
                   context_tokens = CASE WHEN %s > 0 THEN %s ELSE context_tokens END
               WHERE id = %s""",
            (
                title_from_prompt(prompt),
                model,
                time.time(),
                message_count,
                input_tokens,
                output_tokens,
                cached_tokens,
                *subagent_tokens,
                context_tokens,
                context_tokens,
                session_id,
            ),
        )

    def rewound(self, session_id: str, *, message_count: int) -> None:
        self._run(
            """UPDATE dcode_sessions SET
                   title = CASE WHEN %s = 0 THEN '' ELSE title END, updated = %s, message_count = %s, context_tokens = 0
               WHERE id = %s""",
            (message_count, time.time(), message_count, session_id),
        )

    def get(self, session_id: str) -> SessionInfo | None:
        rows = self._rows("SELECT * FROM dcode_sessions WHERE id = %s", (session_id,))
        if not rows:
            rows = self._rows(
                "SELECT * FROM dcode_sessions WHERE id LIKE %s LIMIT 2",
                (_escaped(session_id) + "%",),
            )
        return SessionInfo(**rows[0]) if len(rows) == 1 else None

    def list(
        self, *, cwd: Path | None = None, limit: int = 200, search: str = ""
    ) -> builtins.list[SessionInfo]:
        clauses: builtins.list[str] = []
        params: builtins.list[object] = []
        if cwd is not None:
            clauses.append("cwd = %s")
            params.append(str(cwd))
        if search:
            clauses.append("(title ILIKE %s OR cwd ILIKE %s OR id ILIKE %s)")
            params.extend([f"%{_escaped(search)}%"] * 3)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._rows(
            f"SELECT * FROM dcode_sessions {where} ORDER BY updated DESC LIMIT %s",
            (*params, limit),
        )
        return [SessionInfo(**row) for row in rows]

    def delete(self, session_id: str) -> bool:
        info = self.get(session_id)
        if info is None:
            return False
        # The threads first: a session whose deletion stopped half-way is still listed, and
        # deleting it again finishes the job.
        with self._saver() as saver:
            threads.delete_session_threads(saver, info.id)
        with self._connection() as conn, conn.transaction():
            conn.execute("DELETE FROM dcode_sessions WHERE id = %s", (info.id,))
            conn.execute("DELETE FROM dcode_turns WHERE session_id = %s", (info.id,))
            conn.execute("DELETE FROM dcode_file_changes WHERE session_id = %s", (info.id,))
            wanted = self._kept_hashes(conn)
        self.blobs.keep_only(wanted)
        return True

    def check(self) -> int | None:
        """On a connection of its own, making nothing: a server nobody saved to says None."""
        with connect(self.url) as conn, server_errors(self.url):
            if not has_schema(conn):
                return None
            row = conn.execute("SELECT count(*) AS n FROM dcode_sessions").fetchone()
        return int(row["n"]) if row else 0

    # -- turns and file changes ---------------------------------------------------------------

    def begin_turn(self, session_id: str, prompt: str, checkpoint_id: str | None) -> int:
        self._ready()
        with self._connection() as conn:
            row = conn.execute(
                """INSERT INTO dcode_turns (session_id, prompt, started, checkpoint_id, change_mark)
                   VALUES (%s, %s, %s, %s, (SELECT coalesce(max(id), 0) FROM dcode_file_changes))
                   RETURNING id""",
                (session_id, clipped_prompt(prompt), time.time(), checkpoint_id),
            ).fetchone()
        return int(row["id"]) if row else 0

    def turns(self, session_id: str) -> builtins.list[Turn]:
        rows = self._rows(
            "SELECT id, session_id, prompt, started, checkpoint_id, change_mark FROM dcode_turns WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        if not rows:
            return []
        changes = self._rows(
            "SELECT id, path FROM dcode_file_changes WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        counts = files_changed(
            (row["change_mark"] for row in rows), [(c["id"], c["path"]) for c in changes]
        )
        return [
            Turn(
                row["id"],
                row["session_id"],
                number,
                row["prompt"],
                row["started"],
                row["checkpoint_id"],
                row["change_mark"],
                count,
            )
            for number, (row, count) in enumerate(zip(rows, counts, strict=True), start=1)
        ]

    def forget_turns(self, session_id: str, from_turn: int) -> None:
        self._run(
            "DELETE FROM dcode_turns WHERE session_id = %s AND id >= %s", (session_id, from_turn)
        )

    def record_before(self, session_id: str, path: Path) -> int:
        before_sha, kept = self._keep(path)
        self._ready()
        with self._connection() as conn:
            row = conn.execute(
                """INSERT INTO dcode_file_changes (session_id, path, before_sha, kept, at)
                   VALUES (%s, %s, %s, %s, %s) RETURNING id""",
                (session_id, str(path), before_sha, kept, time.time()),
            ).fetchone()
        return int(row["id"]) if row else 0

    def record_after(self, change_id: int, path: Path) -> None:
        self._run(
            "UPDATE dcode_file_changes SET after_sha = %s WHERE id = %s",
            (current_hash(path), change_id),
        )

    def changes_since(self, session_id: str, mark: int) -> builtins.list[FileChange]:
        rows = self._rows(
            "SELECT id, path, before_sha, kept, after_sha FROM dcode_file_changes WHERE session_id = %s AND id > %s ORDER BY id",
            (session_id, mark),
        )
        return [
            FileChange(r["id"], Path(r["path"]), r["before_sha"], bool(r["kept"]), r["after_sha"])
            for r in rows
        ]

    def drop_changes(self, change_ids: Iterable[int]) -> None:
        self._run("DELETE FROM dcode_file_changes WHERE id = ANY(%s)", (builtins.list(change_ids),))

    def export_records(self, session_id: str) -> SessionRecords | None:
        rows = self._rows("SELECT * FROM dcode_sessions WHERE id = %s", (session_id,))
        if not rows:
            return None
        turns = self._rows(
            "SELECT prompt, started, checkpoint_id, change_mark FROM dcode_turns WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        changes = self._rows(
            "SELECT id, path, before_sha, kept, after_sha, at FROM dcode_file_changes WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        return SessionRecords(
            SessionInfo(**rows[0]),
            [TurnRecord(**row) for row in turns],
            [ChangeRecord(**row) for row in changes],
        )

    def import_records(self, records: SessionRecords) -> None:
        """The changes take ids from the store's own sequence, in their order (other sessions'
        changes may come between: a turn's mark only counts its own session's)."""
        info = dataclasses.asdict(records.info)
        self._ready()
        with self._connection() as conn, conn.transaction():
            taken = conn.execute("SELECT 1 FROM dcode_sessions WHERE id = %s", (info["id"],))
            if taken.fetchone():
                raise ValueError(f"session {info['id']} is already in {self.name}")
            conn.execute(
                f"INSERT INTO dcode_sessions ({', '.join(info)}) VALUES ({', '.join(['%s'] * len(info))})",
                tuple(info.values()),
            )
            new_ids = {
                change.id: self._insert_change(conn, info["id"], change)
                for change in records.changes
            }
            base = min(new_ids.values(), default=1) - 1
            for turn in records.turns:
                conn.execute(
                    "INSERT INTO dcode_turns (session_id, prompt, started, checkpoint_id, change_mark) VALUES (%s, %s, %s, %s, %s)",
                    (
                        info["id"],
                        turn.prompt,
                        turn.started,
                        turn.checkpoint_id,
                        moved_mark(turn.change_mark, new_ids, base),
                    ),
                )

    @staticmethod
    def _insert_change(conn: Conn, session_id: str, change: ChangeRecord) -> int:
        row = conn.execute(
            """INSERT INTO dcode_file_changes (session_id, path, before_sha, kept, after_sha, at)
               VALUES (%s, %s, %s, %s, %s, %s) RETURNING id""",
            (session_id, change.path, change.before_sha, change.kept, change.after_sha, change.at),
        ).fetchone()
        assert row is not None
        return int(row["id"])

    def prune(self, *, now: float | None = None, keep_days: float = KEEP_DAYS) -> bool:
        now = time.time() if now is None else now
        marker = self.blobs.root / PRUNED_MARKER
        try:
            if now - marker.stat().st_mtime < DAY_SECONDS:
                return False
        except FileNotFoundError:
            pass
        if not self._ready():
            return False
        cutoff = now - keep_days * DAY_SECONDS
        with self._connection() as conn, conn.transaction():
            conn.execute("DELETE FROM dcode_turns WHERE started < %s", (cutoff,))
            conn.execute("DELETE FROM dcode_file_changes WHERE at < %s", (cutoff,))
            wanted = self._kept_hashes(conn)
        self.blobs.keep_only(wanted)
        write_private(marker, "")
        os.utime(marker, (now, now))
        return True

    @staticmethod
    def _kept_hashes(conn: Conn) -> set[str]:
        """The kept contents any change of any session still needs: the blobs are this
        machine's files, the changes everyone's (another machine's hashes keep nothing here)."""
        rows = conn.execute(
            "SELECT DISTINCT before_sha FROM dcode_file_changes WHERE before_sha IS NOT NULL"
        ).fetchall()
        return {row["before_sha"] for row in rows}

    def _keep(self, path: Path) -> tuple[str | None, bool]:
        """(the hash of what ``path`` holds, whether it was kept); (None, True) for no file."""
        try:
            with open_regular(path) as handle:
                if os.fstat(handle.fileno()).st_size > MAX_BLOB_BYTES:
                    return current_hash(path), False
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError, NotRegularFile):
            return None, True
        return self.blobs.put(data), True

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


def _escaped(text: str) -> str:
    """``text`` matched as it is by LIKE (its ``%`` and ``_`` too)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
