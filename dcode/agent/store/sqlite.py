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
import dataclasses
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    renumbered,
    title_from_prompt,
)
from dcode.agent.store.file_lock import SessionLock
from dcode.agent.store.serde import safe_serde
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
from dcode.regular_files import NotRegularFile, open_regular
from dcode.settings.private_files import ensure_private_file, write_private

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


class SqliteStore(SessionStore):
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

    def _has_tables(self, conn: sqlite3.Connection) -> bool:
        """A read-only store of a file an earlier dcode made may lack the newer tables."""
        return "dcode_turns" in _tables(conn)

    # -- the session list ------------------------------------------------------------------

    def create(self, session_id: str, cwd: Path, model: str) -> SessionInfo:
        now = time.time()
        with self._connect() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO dcode_sessions (id, cwd, model, created, updated) VALUES (?, ?, ?, ?, ?)",
                (session_id, str(cwd), model, now, now),
            )
        info = self.get(session_id)
        assert info is not None
        return info

    def fork(self, source: SessionInfo, session_id: str, *, message_count: int) -> SessionInfo:
        now = time.time()
        with self._connect() as conn:
            conn.execute(
                """INSERT INTO dcode_sessions (id, cwd, model, title, created, updated, message_count, context_tokens)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
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
        with self._connect() as conn:
            conn.execute(
                """UPDATE dcode_sessions SET
                       title = CASE WHEN title = '' THEN ? ELSE title END, updated = ?, message_count = ?
                   WHERE id = ?""",
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
        with self._connect() as conn:
            conn.execute(
                """UPDATE dcode_sessions SET
                       title = CASE WHEN title = '' THEN ? ELSE title END,
                       model = ?, updated = ?, message_count = ?,
                       input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
                       cached_tokens = cached_tokens + ?,
                       subagent_input_tokens = subagent_input_tokens + ?,
                       subagent_output_tokens = subagent_output_tokens + ?,
                       subagent_cached_tokens = subagent_cached_tokens + ?,
                       context_tokens = CASE WHEN ? > 0 THEN ? ELSE context_tokens END
                   WHERE id = ?""",
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
        with self._connect() as conn:
            conn.execute(
                """UPDATE dcode_sessions SET
                       title = CASE WHEN ? = 0 THEN '' ELSE title END, updated = ?, message_count = ?, context_tokens = 0
                   WHERE id = ?""",
                (message_count, time.time(), message_count, session_id),
            )

    def get(self, session_id: str) -> SessionInfo | None:
        rows = self._query("SELECT * FROM dcode_sessions WHERE id = ?", (session_id,))
        if rows:
            return rows[0]
        matches = self._query(
            "SELECT * FROM dcode_sessions WHERE id LIKE ? LIMIT 2", (session_id + "%",)
        )
        return matches[0] if len(matches) == 1 else None

    def list(
        self, *, cwd: Path | None = None, limit: int = 200, search: str = ""
    ) -> builtins.list[SessionInfo]:
        clauses, params = [], []
        if cwd is not None:
            clauses.append("cwd = ?")
            params.append(str(cwd))
        if search:
            clauses.append("(title LIKE ? OR cwd LIKE ? OR id LIKE ?)")
            params.extend([f"%{search}%"] * 3)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return self._query(
            f"SELECT * FROM dcode_sessions {where} ORDER BY updated DESC LIMIT ?", (*params, limit)
        )

    def delete(self, session_id: str) -> bool:
        info = self.get(session_id)
        if info is None:
            return False
        # The threads first: a session whose deletion stopped half-way is still listed, and
        # deleting it again finishes the job.
        with self._saver(write=True) as saver:
            if saver is not None:
                threads.delete_session_threads(saver, info.id)
        with self._connect() as conn:
            conn.execute("DELETE FROM dcode_sessions WHERE id = ?", (info.id,))
            conn.execute("DELETE FROM dcode_turns WHERE session_id = ?", (info.id,))
            conn.execute("DELETE FROM dcode_file_changes WHERE session_id = ?", (info.id,))
            wanted = self._kept_hashes(conn)
        self.blobs.keep_only(wanted)
        return True

    def check(self) -> int | None:
        if not self.db_path.exists():
            return None
        with self._connect() as conn:
            return int(conn.execute("SELECT count(*) FROM dcode_sessions").fetchone()[0])

    def _query(self, sql: str, params: tuple) -> builtins.list[SessionInfo]:
        if not self.db_path.exists():
            return []
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            return [SessionInfo(**dict(row)) for row in conn.execute(sql, params)]

    # -- turns and file changes ---------------------------------------------------------------

    def begin_turn(self, session_id: str, prompt: str, checkpoint_id: str | None) -> int:
        with self._connect() as conn:
            mark = conn.execute("SELECT coalesce(max(id), 0) FROM dcode_file_changes").fetchone()[0]
            cursor = conn.execute(
                "INSERT INTO dcode_turns (session_id, prompt, started, checkpoint_id, change_mark) VALUES (?, ?, ?, ?, ?)",
                (session_id, clipped_prompt(prompt), time.time(), checkpoint_id, mark),
            )
            return int(cursor.lastrowid or 0)

    def turns(self, session_id: str) -> builtins.list[Turn]:
        if not self.db_path.exists():
            return []
        with self._connect() as conn:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                "SELECT id, session_id, prompt, started, checkpoint_id, change_mark FROM dcode_turns WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
            changes = conn.execute(
                "SELECT id, path FROM dcode_file_changes WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
        counts = files_changed((row[5] for row in rows), changes)
        return [
            Turn(turn_id, sid, number, prompt, started, checkpoint, mark, count)
            for number, ((turn_id, sid, prompt, started, checkpoint, mark), count) in enumerate(
                zip(rows, counts, strict=True), start=1
            )
        ]

    def forget_turns(self, session_id: str, from_turn: int) -> None:
        with self._connect() as conn:
            conn.execute(
                "DELETE FROM dcode_turns WHERE session_id = ? AND id >= ?", (session_id, from_turn)
            )

    def record_before(self, session_id: str, path: Path) -> int:
        before_sha, kept = self._keep(path)
        with self._connect() as conn:
            cursor = conn.execute(
                "INSERT INTO dcode_file_changes (session_id, path, before_sha, kept, at) VALUES (?, ?, ?, ?, ?)",
                (session_id, str(path), before_sha, int(kept), time.time()),
            )
            return int(cursor.lastrowid or 0)

    def record_after(self, change_id: int, path: Path) -> None:
        after = current_hash(path)
        with self._connect() as conn:
            conn.execute(
                "UPDATE dcode_file_changes SET after_sha = ? WHERE id = ?", (after, change_id)
            )

    def changes_since(self, session_id: str, mark: int) -> builtins.list[FileChange]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT id, path, before_sha, kept, after_sha FROM dcode_file_changes WHERE session_id = ? AND id > ? ORDER BY id",
                (session_id, mark),
            ).fetchall()
        return [
            FileChange(i, Path(p), before, bool(kept), after) for i, p, before, kept, after in rows
        ]

    def drop_changes(self, change_ids: Iterable[int]) -> None:
        ids = builtins.list(change_ids)
        with self._connect() as conn:
            conn.executemany("DELETE FROM dcode_file_changes WHERE id = ?", [(i,) for i in ids])

    def export_records(self, session_id: str) -> SessionRecords | None:
        rows = self._query("SELECT * FROM dcode_sessions WHERE id = ?", (session_id,))
        if not rows:
            return None
        with self._connect() as conn:
            if not self._has_tables(conn):
                return SessionRecords(rows[0], [], [])
            turns = conn.execute(
                "SELECT prompt, started, checkpoint_id, change_mark FROM dcode_turns WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
            changes = conn.execute(
                "SELECT id, path, before_sha, kept, after_sha, at FROM dcode_file_changes WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
        return SessionRecords(
            rows[0],
            [TurnRecord(*row) for row in turns],
            [ChangeRecord(i, p, b, bool(k), a, at) for i, p, b, k, a, at in changes],
        )

    def import_records(self, records: SessionRecords) -> None:
        info = dataclasses.asdict(records.info)
        with self._connect() as conn:
            if conn.execute("SELECT 1 FROM dcode_sessions WHERE id = ?", (info["id"],)).fetchone():
                raise ValueError(f"session {info['id']} is already in {self.name}")
            conn.execute(
                f"INSERT INTO dcode_sessions ({', '.join(info)}) VALUES ({', '.join('?' * len(info))})",
                tuple(info.values()),
            )
            base = conn.execute("SELECT coalesce(max(id), 0) FROM dcode_file_changes").fetchone()[0]
            new_ids = renumbered(records.changes, base)
            conn.executemany(
                "INSERT INTO dcode_file_changes (id, session_id, path, before_sha, kept, after_sha, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        new_ids[c.id],
                        info["id"],
                        c.path,
                        c.before_sha,
                        int(c.kept),
                        c.after_sha,
                        c.at,
                    )
                    for c in records.changes
                ],
            )
            conn.executemany(
                "INSERT INTO dcode_turns (session_id, prompt, started, checkpoint_id, change_mark) VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        info["id"],
                        t.prompt,
                        t.started,
                        t.checkpoint_id,
                        moved_mark(t.change_mark, new_ids, base),
                    )
                    for t in records.turns
                ],
            )

    def prune(self, *, now: float | None = None, keep_days: float = KEEP_DAYS) -> bool:
        now = time.time() if now is None else now
        marker = self.blobs.root / PRUNED_MARKER
        try:
            if now - marker.stat().st_mtime < DAY_SECONDS:
                return False
        except FileNotFoundError:
            pass
        if not self.db_path.exists():
            return False
        cutoff = now - keep_days * DAY_SECONDS
        with self._connect() as conn:
            conn.execute("DELETE FROM dcode_turns WHERE started < ?", (cutoff,))
            conn.execute("DELETE FROM dcode_file_changes WHERE at < ?", (cutoff,))
            wanted = self._kept_hashes(conn)
        self.blobs.keep_only(wanted)
        write_private(marker, "")
        os.utime(marker, (now, now))
        return True

    @staticmethod
    def _kept_hashes(conn: sqlite3.Connection) -> set[str]:
        return {
            row[0]
            for row in conn.execute(
                "SELECT before_sha FROM dcode_file_changes WHERE before_sha IS NOT NULL"
            )
        }

    def _keep(self, path: Path) -> tuple[str | None, bool]:
        """(the hash of what ``path`` holds, whether it was kept); (None, True) for no file,
        a named pipe or a device included (the file tools write none of those)."""
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
