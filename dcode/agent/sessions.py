"""Session metadata beside LangGraph's checkpoints, in the same ``sessions.db``.

The checkpointer owns the conversation; this table owns what a picker needs without loading
any state: id, cwd, model, title, times, message count and the last token figures. It uses
the standard library only, so ``dcode sessions list`` stays instant. A store opened
``read_only`` (``dcode sessions show``) never writes to the file.

A sessions.db that SQLite cannot use (overwritten, truncated, not a database at all) raises
``SessionDatabaseError``: one line naming the file and how to get going again, which every
entry point prints as it is.

Damage inside a file that still opens (pages zeroed in the middle) is found by
``check_database``: ``PRAGMA quick_check`` before this process first opens the file, and again
when a read or write of it fails. A file found damaged is never written to again by this
process, so what is left of it stays as it was for whoever recovers it.
"""

from __future__ import annotations

import asyncio
import builtins
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractContextManager,
    asynccontextmanager,
    closing,
    contextmanager,
    suppress,
)
from dataclasses import dataclass
from pathlib import Path

from dcode.agent.saved_thread import delete_thread
from dcode.settings.private_files import ensure_private_file

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
_ADDED_COLUMNS = dict.fromkeys(
    ("cached_tokens", "subagent_input_tokens", "subagent_output_tokens", "subagent_cached_tokens"),
    "INTEGER NOT NULL DEFAULT 0",
)


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    present = {row[1] for row in conn.execute("PRAGMA table_info(dcode_sessions)")}
    for name, definition in _ADDED_COLUMNS.items():
        if name not in present:
            conn.execute(f"ALTER TABLE dcode_sessions ADD COLUMN {name} {definition}")


TITLE_LENGTH = 80
_DAMAGED = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)
DAMAGED_DATABASE = "damaged_database"
"""The ``ErrorEvent`` kind of a turn stopped by a damaged sessions.db (headless exits 2 for it)."""


class SessionDatabaseError(Exception):
    """sessions.db cannot be used; the message is the line to show, path and remedy included."""

    def __init__(self, path: Path, detail: str, *, damaged: bool) -> None:
        self.path = path
        self.damaged = damaged
        if damaged:
            message = f"the session database {path} is damaged ({detail}): move it aside with `{_move_aside(path)}` and dcode starts a new one"
        else:
            message = f"cannot use the session database {path}: {detail}"
        super().__init__(message)


def _move_aside(path: Path) -> str:
    """The command that moves the file aside, with its write-ahead log when it has one (its
    latest changes, which belong with it)."""
    wal = Path(f"{path}-wal")
    command = f"mv {path} {path}.bad"
    try:
        logged = wal.stat().st_size > 0
    except OSError:
        logged = False
    return f"{command}; mv {wal} {path}.bad-wal" if logged else command


def _is_damage(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _DAMAGED


def is_file_error(error: sqlite3.Error) -> bool:
    """An error about the database file (locked, damaged, unreadable, full), as opposed to a
    misuse (a bad query, a constraint), which stays the bug it is."""
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError


# What this process knows of each sessions.db, by resolved path: found damaged (never opened
# again), or found sound (with the file's identity: the same file is not checked twice).
_damage: dict[Path, SessionDatabaseError] = {}
_sound: dict[Path, tuple[int, int]] = {}


def known_damage(path: Path) -> SessionDatabaseError | None:
    """The refusal for ``path`` if this process has found it damaged."""
    return _damage.get(path.resolve())


def check_database(path: Path) -> None:
    """Refuse ``path`` (``SessionDatabaseError``) if it is damaged, before anything opens it.

    ``PRAGMA quick_check`` reads every page of the file, about 0.1 s for 50 MB
    (``scripts/bench/sessions_db.py``), so a file is checked once per process; a failed read or
    write checks it again (``refusal_for``). The check's own connection is read-only: finding
    the damage writes nothing."""
    known = known_damage(path)
    if known is not None:
        raise known
    try:
        stat = path.stat()
    except FileNotFoundError:
        return
    resolved, identity = path.resolve(), (stat.st_dev, stat.st_ino)
    if _sound.get(resolved) == identity:
        return
    problems = _quick_check(path)
    if problems is not None:
        raise _record_damage(path, problems)
    _sound[resolved] = identity


def _quick_check(path: Path) -> str | None:
    """What SQLite finds wrong with ``path``; None when it finds nothing, or cannot look (the
    file is busy or cannot be opened here: the real open then says what is wrong)."""
    try:
        with closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        ) as conn:
            rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)")]
    except sqlite3.DatabaseError as exc:
        return str(exc) if _is_damage(exc) else None
    except sqlite3.Error:
        return None
    if rows == ["ok"]:
        return None
    # One row per problem, the first headed "*** in database main ***" on a line of its own.
    lines = [
        line.strip()
        for row in rows
        for line in row.splitlines()
        if line.strip() and not line.startswith("***")
    ]
    return "; ".join(lines[:3]) or "quick_check failed"


def _record_damage(path: Path, detail: str) -> SessionDatabaseError:
    error = SessionDatabaseError(path, detail, damaged=True)
    _damage[path.resolve()] = error
    return error


def refusal_for(path: Path, error: sqlite3.Error) -> SessionDatabaseError:
    """What a failed read or write of ``path`` means, as the line to show: damage when SQLite
    says so or the check finds it (and from then on this process refuses the file), else the
    error as SQLite gave it. Blocking: the check reads the whole file."""
    if _is_damage(error):
        return _record_damage(path, str(error))
    _sound.pop(path.resolve(), None)
    try:
        check_database(path)
    except SessionDatabaseError as damaged:
        return damaged
    return SessionDatabaseError(path, str(error), damaged=False)


@contextmanager
def database_errors(path: Path) -> Iterator[None]:
    """Turn what SQLite raises for an unusable database file into ``SessionDatabaseError``
    (checking the file for damage first); misuse (a bad query, a constraint) stays the bug it is."""
    try:
        yield
    except sqlite3.Error as exc:
        if not is_file_error(exc):
            raise
        raise refusal_for(path, exc) from exc


@asynccontextmanager
async def async_database_errors(path: Path) -> AsyncIterator[None]:
    """``database_errors`` for the event loop: the check runs in a thread."""
    try:
        yield
    except sqlite3.Error as exc:
        if not is_file_error(exc):
            raise
        raise await asyncio.to_thread(refusal_for, path, exc) from exc


@contextmanager
def log_kept_out(path: Path) -> Iterator[None]:
    """While open, the last writer to close ``path`` leaves its write-ahead log as it is: SQLite
    copies the log into the file only when it can lock the file, and a reader holds it. For a
    damaged file, whose bytes must stay as they were."""
    try:
        reader = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        yield
        return
    with closing(reader):
        with suppress(sqlite3.Error):
            reader.execute(
                "PRAGMA schema_version"
            ).fetchone()  # takes the lock it holds from now on
        yield


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
    db_path: Path,
    schema: str,
    *,
    read_only: bool = False,
    migrate: Callable[[sqlite3.Connection], None] | None = None,
) -> Iterator[sqlite3.Connection]:
    """A connection to ``sessions.db`` for one unit of work, committed when it ends well.

    A writer makes the file private first, uses WAL, and creates ``schema``'s tables (then
    ``migrate``s them); a ``read_only`` one never writes to the file. A damaged file is refused
    before either opens it (``check_database``); errors SQLite raises for an unusable file become
    ``SessionDatabaseError``."""
    check_database(db_path)
    if read_only:
        with (
            database_errors(db_path),
            closing(
                sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
            ) as conn,
        ):
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
        return connect(
            self.db_path, _SCHEMA, read_only=self.read_only, migrate=_add_missing_columns
        )

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
        """Read the whole database once (``dcode doctor``: opening it checks it); the number of
        sessions, or ``SessionDatabaseError`` saying what is wrong with it."""
        with self._connect() as conn:
            return int(conn.execute("SELECT count(*) FROM dcode_sessions").fetchone()[0])

    def _query(self, sql: str, params: tuple) -> builtins.list[SessionInfo]:
        if not self.db_path.exists():
            return []
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            return [SessionInfo(**dict(row)) for row in conn.execute(sql, params)]
