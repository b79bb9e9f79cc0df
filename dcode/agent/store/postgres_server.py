"""The PostgreSQL store's server: connections, dcode's schema and what a failure means.

dcode's tables are made and changed by numbered migrations (``MIGRATIONS``), each applied once
and noted in ``dcode_schema_version``; LangGraph's checkpointer sets up its own tables the same
way (``PostgresSaver.setup``), right after. Two processes starting at once against a new
database would both try: a session-level advisory lock (``MIGRATION_LOCK``) lets one migrate
while the other waits, then finds nothing left to do. A process migrates a server once.

What the server or the network refuses (no such host, connection refused, a role that does not
exist, a wrong password, a connection terminated mid-turn, a full disk) is psycopg's
``OperationalError`` (or ``InterfaceError`` for a connection already gone); each becomes one
``SessionDatabaseError`` line naming the server, without its password. A bad query or a
constraint stays the bug it is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import PoolTimeout

from dcode.agent.store.base import SessionDatabaseError
from dcode.settings.database import database_location

CONNECT_TIMEOUT = 10  # seconds to reach the server before saying it cannot be reached
MIGRATION_LOCK = 0x64636F6465_01  # "dcode" 1: the advisory lock migrations run under
MIGRATION_WAIT = 120.0  # seconds to wait for another process's migration
CONNECTION = {"autocommit": True, "row_factory": dict_row}
"""How every connection is made: LangGraph's savers need autocommit and dict rows."""

MIGRATIONS = [
    """
    CREATE TABLE dcode_sessions (
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        model TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        created DOUBLE PRECISION NOT NULL,
        updated DOUBLE PRECISION NOT NULL,
        message_count BIGINT NOT NULL DEFAULT 0,
        input_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        context_tokens BIGINT NOT NULL DEFAULT 0,
        cached_tokens BIGINT NOT NULL DEFAULT 0,
        subagent_input_tokens BIGINT NOT NULL DEFAULT 0,
        subagent_output_tokens BIGINT NOT NULL DEFAULT 0,
        subagent_cached_tokens BIGINT NOT NULL DEFAULT 0
    );
    CREATE INDEX dcode_sessions_updated ON dcode_sessions (updated DESC);
    CREATE INDEX dcode_sessions_cwd ON dcode_sessions (cwd, updated DESC);
    CREATE TABLE dcode_turns (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        started DOUBLE PRECISION NOT NULL,
        checkpoint_id TEXT,
        change_mark BIGINT NOT NULL
    );
    CREATE INDEX dcode_turns_session ON dcode_turns (session_id, id);
    CREATE TABLE dcode_file_changes (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id TEXT NOT NULL,
        path TEXT NOT NULL,
        before_sha TEXT,
        kept BOOLEAN NOT NULL,
        after_sha TEXT,
        at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX dcode_file_changes_session ON dcode_file_changes (session_id, id);
    """,
]

_migrated: set[str] = set()
_migrating = threading.Lock()


def store_error(location: str, detail: str) -> SessionDatabaseError:
    return SessionDatabaseError(
        f"cannot use the session database {location}: {detail}", damaged=False
    )


def is_server_error(error: BaseException) -> bool:
    """An error about reaching or using the server, as opposed to a misuse (a bad query, a
    constraint), which stays the bug it is."""
    return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)


def one_line(error: BaseException) -> str:
    """psycopg's words on one line (it adds hints on lines of their own), without the
    ``connection failed:`` every connection error starts with."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text.removeprefix("connection failed: ")


def connect(url: str, **options: object) -> psycopg.Connection[DictRow]:
    """A connection of its own (the pools make theirs with ``CONNECTION``), or the store's
    line for why there is none."""
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT, **CONNECTION, **options)  # type: ignore[arg-type]
    except psycopg.Error as exc:  # a malformed address is a ProgrammingError
        raise store_error(database_location(url), one_line(exc)) from exc


def refusal(url: str, error: BaseException) -> SessionDatabaseError | None:
    """What ``error`` (or an error it came from) means for the store at ``url``; None when it
    is not about the store. A pool that timed out says nothing of why: a connection of its own
    finds out."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, SessionDatabaseError):
            return link
        if isinstance(link, PoolTimeout):
            return _why_unreachable(url, link)
        if is_server_error(link):
            return store_error(database_location(url), one_line(link))
        link = link.__cause__ or link.__context__
    return None


def _why_unreachable(url: str, timeout: PoolTimeout) -> SessionDatabaseError:
    try:
        connect(url).close()
    except SessionDatabaseError as found:
        return found
    return store_error(database_location(url), one_line(timeout))


@contextmanager
def server_errors(url: str) -> Iterator[None]:
    try:
        yield
    except (psycopg.Error, PoolTimeout) as exc:
        found = refusal(url, exc)
        if found is None:
            raise
        raise found from exc


@asynccontextmanager
async def async_server_errors(url: str) -> AsyncIterator[None]:
    with server_errors(url):
        yield


def migrate(url: str) -> None:
    """dcode's tables and the checkpointer's, as this version of dcode needs them; once per
    process and server, under the migration lock."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with _migrating:
        if url in _migrated:
            return
        with connect(url) as conn, server_errors(url):
            _take_migration_lock(conn, url)
            try:
                _apply_migrations(conn)
                PostgresSaver(conn).setup()
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        _migrated.add(url)


def _take_migration_lock(conn: psycopg.Connection[DictRow], url: str) -> None:
    """Take ``MIGRATION_LOCK`` by trying, not by waiting in ``pg_advisory_lock``: a statement
    waiting there holds a snapshot, and the checkpointer's ``CREATE INDEX CONCURRENTLY`` in
    the process that has the lock waits for every snapshot to go (a deadlock)."""
    deadline = time.monotonic() + MIGRATION_WAIT
    while True:
        row = conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (MIGRATION_LOCK,)).fetchone()
        if row and row["got"]:
            return
        if time.monotonic() > deadline:
            raise store_error(
                database_location(url),
                f"another dcode has been setting up its tables for over {MIGRATION_WAIT:.0f} s",
            )
        time.sleep(0.05)


def _apply_migrations(conn: psycopg.Connection[DictRow]) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS dcode_schema_version (version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()))"
    )
    row = conn.execute("SELECT coalesce(max(version), 0) AS v FROM dcode_schema_version").fetchone()
    done = int(row["v"]) if row else 0
    for version, migration in enumerate(MIGRATIONS[done:], start=done + 1):
        with conn.transaction():
            conn.execute(migration)
            conn.execute("INSERT INTO dcode_schema_version (version) VALUES (%s)", (version,))


def has_schema(conn: psycopg.Connection[DictRow]) -> bool:
    """Whether any dcode ever saved a session here (a reader makes nothing to find out)."""
    row = conn.execute("SELECT to_regclass('dcode_sessions') IS NOT NULL AS present").fetchone()
    return bool(row and row["present"])
