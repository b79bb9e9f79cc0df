"""Session metadata beside LangGraph's checkpoints, in the same ``sessions.db``.

The checkpointer owns the conversation; this table owns what a picker needs without loading
any state: id, cwd, model, title, times, message count and the last token figures. It uses
the standard library only, so ``dcode sessions list`` stays instant. A store opened
``read_only`` (``dcode sessions show``) never writes to the file.

A sessions.db that SQLite cannot use (overwritten, truncated, not a database at all) raises
``SessionDatabaseError``: one line naming the file and how to get going again, which every
entry point prints as it is.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from dcode.agent.saved_thread import delete_thread
from dcode.private_files import ensure_private_file

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
"""

# Columns added since the first schema, with their definitions: a table made before them gains
# them when a writer opens it (a read-only store reads the dataclass's default instead).
_ADDED_COLUMNS = {
    name: "INTEGER NOT NULL DEFAULT 0"
    for name in ("cached_tokens", "subagent_input_tokens", "subagent_output_tokens", "subagent_cached_tokens")
}


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    present = {row[1] for row in conn.execute("PRAGMA table_info(dcode_sessions)")}
    for name, definition in _ADDED_COLUMNS.items():
        if name not in present:
            conn.execute(f"ALTER TABLE dcode_sessions ADD COLUMN {name} {definition}")

TITLE_LENGTH = 80
_DAMAGED = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)


class SessionDatabaseError(Exception):
    """sessions.db cannot be used; the message is the line to show, path and remedy included."""

    def __init__(self, path: Path, detail: str, *, damaged: bool) -> None:
        self.path = path
        if damaged:
            message = (
                f"the session database {path} is damaged ({detail}): "
                f"move it aside with `mv {path} {path}.bad` and dcode starts a new one"
            )
        else:
            message = f"cannot use the session database {path}: {detail}"
        super().__init__(message)

    @classmethod
    def from_sqlite(cls, path: Path, error: sqlite3.Error) -> SessionDatabaseError:
        code = getattr(error, "sqlite_errorcode", None)
        return cls(path, str(error), damaged=code is not None and code & 0xFF in _DAMAGED)


@contextmanager
def database_errors(path: Path) -> Iterator[None]:
    """Turn what SQLite raises for an unusable database file into ``SessionDatabaseError``;
    misuse (a bad query, a constraint) stays the bug it is."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise SessionDatabaseError.from_sqlite(path, exc) from exc
    except sqlite3.DatabaseError as exc:
        if type(exc) is not sqlite3.DatabaseError:
            raise
        raise SessionDatabaseError.from_sqlite(path, exc) from exc


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    cwd: str
    model: str
    title: str
    created: float
    updated: float
    message_count: int
    input_tokens: int = 0
    output_tokens: int = 0
    context_tokens: int = 0
    cached_tokens: int = 0
    """The part of ``input_tokens`` the provider read from its prompt cache."""
    subagent_input_tokens: int = 0
    """The part of ``input_tokens`` the session's subagents used (and so on for the others)."""
    subagent_output_tokens: int = 0
    subagent_cached_tokens: int = 0


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


def title_from_prompt(prompt: str) -> str:
    line = next((part.strip() for part in prompt.splitlines() if part.strip()), "")
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


@contextmanager
def connect(
    db_path: Path, schema: str, *, read_only: bool = False, migrate: Callable[[sqlite3.Connection], None] | None = None
) -> Iterator[sqlite3.Connection]:
    """A connection to ``sessions.db`` for one unit of work, committed when it ends well.

    A writer makes the file private first, uses WAL, and creates ``schema``'s tables (then
    ``migrate``s them); a ``read_only`` one never writes to the file. Errors SQLite raises for
    an unusable file become ``SessionDatabaseError``."""
    if read_only:
        with database_errors(db_path), closing(sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)) as conn:
            yield conn
        return
    ensure_private_file(db_path)  # before SQLite, which gives -wal and -shm its mode
    with database_errors(db_path):
        conn = sqlite3.connect(db_path, timeout=10)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(schema)
            if migrate is not None:
                migrate(conn)
            yield conn
            conn.commit()
        finally:
            conn.close()


class SessionStore:
    def __init__(self, db_path: Path, *, read_only: bool = False) -> None:
        self.db_path = db_path
        self.read_only = read_only

    def _connect(self) -> AbstractContextManager[sqlite3.Connection]:
        return connect(self.db_path, _SCHEMA, read_only=self.read_only, migrate=_add_missing_columns)

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
        """A new session's row for a copy of ``source``'s history: its title, cwd, model and
        context figure; the tokens spent so far stay ``source``'s."""
        now = time.time()
        with self._connect() as conn:
            conn.execute(
                """INSERT INTO dcode_sessions (id, cwd, model, title, created, updated, message_count, context_tokens)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                (session_id, source.cwd, source.model, source.title, now, now, message_count, source.context_tokens),
            )
        info = self.get(session_id)
        assert info is not None
        return info

    def start_turn(self, session_id: str, *, prompt: str, message_count: int) -> None:
        """What a session is listed by as soon as a turn starts: its title (the first prompt)
        and the thread's size with the prompt in it, so that a process killed during the turn
        leaves a session that lists properly. ``record_turn`` completes the figures."""
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
        """Add a turn's figures; ``subagent_tokens`` (input, output, cached) is the part of
        them its subagents used."""
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
        """The session's conversation went back: its size now, and no title when it is empty
        (the next prompt names it again). The tokens spent stay spent."""
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
        matches = self._query("SELECT * FROM dcode_sessions WHERE id LIKE ? LIMIT 2", (session_id + "%",))
        return matches[0] if len(matches) == 1 else None

    def list(self, *, cwd: Path | None = None, limit: int = 200, search: str = "") -> list[SessionInfo]:
        clauses, params = [], []
        if cwd is not None:
            clauses.append("cwd = ?")
            params.append(str(cwd))
        if search:
            clauses.append("(title LIKE ? OR cwd LIKE ? OR id LIKE ?)")
            params.extend([f"%{search}%"] * 3)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return self._query(f"SELECT * FROM dcode_sessions {where} ORDER BY updated DESC LIMIT ?", (*params, limit))

    def latest(self, *, cwd: Path | None = None) -> SessionInfo | None:
        found = self.list(cwd=cwd, limit=1)
        return found[0] if found else None

    def delete(self, session_id: str) -> bool:
        info = self.get(session_id)
        if info is None:
            return False
        with self._connect() as conn:
            conn.execute("DELETE FROM dcode_sessions WHERE id = ?", (info.id,))
            delete_thread(conn, info.id)
        return True

    def check(self) -> int:
        """Read the whole database once (``dcode doctor``); the number of sessions, or
        ``SessionDatabaseError`` saying what is wrong with it."""
        with self._connect() as conn:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise SessionDatabaseError(self.db_path, "; ".join(map(str, problems[:3])), damaged=True)
            return int(conn.execute("SELECT count(*) FROM dcode_sessions").fetchone()[0])

    def _query(self, sql: str, params: tuple) -> list[SessionInfo]:
        if not self.db_path.exists():
            return []
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            return [SessionInfo(**dict(row)) for row in conn.execute(sql, params)]
