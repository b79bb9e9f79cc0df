"""A SQLite ``sessions.db`` kept usable: refused once damaged, checked when it fails.

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
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, closing, contextmanager, suppress
from pathlib import Path

from dcode.agent.store.base import SessionDatabaseError
from dcode.settings.private_files import ensure_private_file

_DAMAGED = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)


def database_error(path: Path, detail: str, *, damaged: bool) -> SessionDatabaseError:
    """The line for ``path`` that cannot be used: what is wrong, and how to get going again."""
    if damaged:
        message = f"the session database {path} is damaged ({detail}): move it aside with `{_move_aside(path)}` and dcode starts a new one"
    else:
        message = f"cannot use the session database {path}: {detail}"
    return SessionDatabaseError(message, damaged=damaged)


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
    error = database_error(path, detail, damaged=True)
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
    return database_error(path, str(error), damaged=False)


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
