"""The PostgreSQL store's server: connections, dcode's schema and what a failure means.

dcode's tables are made and changed by numbered migrations (``MIGRATIONS``), each applied once
and noted in ``dcode_schema_version``; LangGraph's checkpointer sets up its own tables
(``PostgresSaver.setup``, its own numbered migrations) right after, and the version of the
package that did is noted there too, so that a server already set up costs one query. Two
processes starting at once against a new database would both try: a session-level advisory
lock (``MIGRATION_LOCK``) lets one migrate while the other waits, then finds nothing left to
do. A process migrates a server once.

What the server or the network refuses (no such host, connection refused, a role that does not
exist, a wrong password, a connection terminated mid-turn, a full disk) is psycopg's
``OperationalError`` (or ``InterfaceError`` for a connection already gone); each becomes one
``SessionDatabaseError`` line naming the server, without its password. A bad query or a
constraint stays the bug it is.
"""

# Any: psycopg_pool's pool options, passed through to it as given

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from dcode.agent.store.base import SessionDatabaseError
from dcode.settings.database import database_location, without_secrets

CONNECT_TIMEOUT = 10  # seconds to reach the server before saying it cannot be reached
QUICK = 0.5  # seconds a pool is waited for before a connection of its own asks the server
MIGRATION_LOCK = 0x64636F6465_01  # "dcode" 1: the advisory lock migrations run under
MIGRATION_WAIT = 120.0  # seconds to wait for another process's migration
CONNECTION = {"autocommit": True, "row_factory": dict_row}
"""How every connection is made (``connect`` too): LangGraph's savers need autocommit and
dict rows."""
COMPRESSION = "-c default_toast_compression=lz4"
"""For the checkpointer's connections: a long session's history snapshot is read back whole a
few times a turn, and lz4 decompresses it several times faster than Postgres's default."""

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
    # 2: what each session spent, by model and agent (/cost, budgets).
    """
    CREATE TABLE dcode_usage (
        session_id TEXT NOT NULL,
        model TEXT NOT NULL,
        agent TEXT NOT NULL,
        input_tokens BIGINT NOT NULL DEFAULT 0,
        cached_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        reasoning_tokens BIGINT NOT NULL DEFAULT 0,
        cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
        priced INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (session_id, model, agent)
    );
    """,
]

_migrated: set[str] = set()
_migrating = threading.Lock()


def store_error(url: str, detail: str) -> SessionDatabaseError:
    """The store's one line about the server at ``url``: its address and ``detail`` never show
    the password (``detail`` may be libpq's words, which can quote the address)."""
    location, detail = database_location(url), without_secrets(detail, url)
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


def with_settings(url: str, settings: str) -> str:
    """``url`` as a libpq connection string whose server settings (``options``, ``-c name=value``)
    also hold ``settings``: added to those the address gives, never in their place."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    given = str(conninfo_to_dict(url).get("options") or "")
    return make_conninfo(url, options=f"{given} {settings}".strip())


def connect(
    url: str, *, conninfo: str | None = None, application_name: str = "dcode"
) -> psycopg.Connection[DictRow]:
    """A connection of its own (the pools make theirs with ``CONNECTION``), or the store's
    line for why there is none; ``conninfo``: what to connect with, when not ``url`` itself
    (the line names ``url``, the only form whose password it knows how to leave out)."""
    try:
        return psycopg.connect(
            conninfo or url,
            autocommit=True,
            row_factory=dict_row,
            connect_timeout=CONNECT_TIMEOUT,
            application_name=application_name,
        )
    except psycopg.Error as exc:  # a malformed address is a ProgrammingError
        raise store_error(url, one_line(exc)) from exc


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
            return store_error(url, one_line(link))
        link = link.__cause__ or link.__context__
    return None


async def probe(url: str, conninfo: str | None = None) -> None:
    """Connect once and leave: the store's line when the server refuses (``connect``'s, on the
    event loop)."""
    try:
        conn = await psycopg.AsyncConnection.connect(
            conninfo or url, connect_timeout=CONNECT_TIMEOUT, application_name="dcode"
        )
    except psycopg.Error as exc:
        raise store_error(url, one_line(exc)) from exc
    await conn.close()


class SessionPool(ConnectionPool[psycopg.Connection[DictRow]]):
    """A pool whose wait for a connection ends as soon as the server is known to refuse one.

    A pool whose connections the server dropped reconnects behind the scenes, and a caller
    waits its whole timeout for one, which a server that is down never gives: a turn cut by a
    stopped server took four such waits to end. So a connection that does not come within
    ``QUICK`` seconds (every one is busy, or there is none) is asked of the server directly; a
    refusal ends the wait with the store's line, and a server that answers (the pool was only
    busy) leaves the caller to wait out the rest."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self.store_url = url

    def getconn(self, timeout: float | None = None) -> psycopg.Connection[DictRow]:
        wait = self.timeout if timeout is None else timeout
        if wait <= QUICK:
            return super().getconn(wait)
        try:
            return super().getconn(QUICK)
        except PoolTimeout:
            connect(self.store_url).close()  # raises a refusal
        return super().getconn(wait - QUICK)


class CheckpointPool(AsyncConnectionPool[psycopg.AsyncConnection[DictRow]]):
    """:class:`SessionPool` for the graph's checkpointer, on the event loop."""

    def __init__(self, url: str, conninfo: str, **options: Any) -> None:
        super().__init__(conninfo, **options)
        self.store_url = url
        self.target = conninfo

    async def getconn(self, timeout: float | None = None) -> psycopg.AsyncConnection[DictRow]:
        wait = self.timeout if timeout is None else timeout
        if wait <= QUICK:
            return await super().getconn(wait)
        try:
            return await super().getconn(QUICK)
        except PoolTimeout:
            await probe(self.store_url, self.target)  # raises a refusal
        return await super().getconn(wait - QUICK)


def _why_unreachable(url: str, timeout: PoolTimeout) -> SessionDatabaseError:
    try:
        connect(url).close()
    except SessionDatabaseError as found:
        return found
    return store_error(url, one_line(timeout))


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
    process and server. A server already set up answers one query (no lock, and LangGraph's
    saver is not even imported: ``dcode sessions list`` stays quick); else under the
    migration lock."""
    with _migrating:
        if url in _migrated:
            return
        with connect(url) as conn, server_errors(url):
            if not _behind(conn):
                _migrated.add(url)
                return
            _take_migration_lock(conn, url)
            try:
                _bring_up_to_date(conn)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        _migrated.add(url)


def _saver_version() -> str:
    from importlib.metadata import version

    return version("langgraph-checkpoint-postgres")


def _versions(conn: psycopg.Connection[DictRow]) -> dict[str, str]:
    """What ``dcode_schema_version`` says was set up: ``dcode`` (how many of ``MIGRATIONS``)
    and ``checkpointer`` (the LangGraph package whose ``setup`` ran last)."""
    present = conn.execute("SELECT to_regclass('dcode_schema_version') IS NOT NULL AS t").fetchone()
    if not present or not present["t"]:
        return {}
    rows = conn.execute("SELECT component, version FROM dcode_schema_version").fetchall()
    return {str(row["component"]): str(row["version"]) for row in rows}


def _behind(conn: psycopg.Connection[DictRow]) -> bool:
    found = _versions(conn)
    mine = int(found.get("dcode", "0") or 0)
    return mine < len(MIGRATIONS) or found.get("checkpointer") != _saver_version()


def _bring_up_to_date(conn: psycopg.Connection[DictRow]) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    conn.execute(
        """CREATE TABLE IF NOT EXISTS dcode_schema_version (
               component TEXT PRIMARY KEY,
               version TEXT NOT NULL,
               applied DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()))"""
    )
    found = _versions(conn)  # again, now that the lock is ours: another process may have run
    done = int(found.get("dcode", "0") or 0)
    for number, migration in enumerate(MIGRATIONS[done:], start=done + 1):
        with conn.transaction():
            conn.execute(migration)
            _note(conn, "dcode", str(number))
    saver = _saver_version()
    if found.get("checkpointer") != saver:
        PostgresSaver(conn).setup()  # LangGraph's own migrations, which it numbers itself
        _note(conn, "checkpointer", saver)


def _note(conn: psycopg.Connection[DictRow], component: str, version: str) -> None:
    conn.execute(
        """INSERT INTO dcode_schema_version (component, version) VALUES (%s, %s)
           ON CONFLICT (component) DO UPDATE SET version = excluded.version, applied = extract(epoch FROM now())""",
        (component, version),
    )


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
                url,
                f"another dcode has been setting up its tables for over {MIGRATION_WAIT:.0f} s",
            )
        time.sleep(0.05)


DCODE_TABLES = frozenset(("dcode_sessions", "dcode_turns", "dcode_file_changes", "dcode_usage"))
"""Every table of dcode's that ``MIGRATIONS`` makes."""


def dcode_tables(conn: psycopg.Connection[DictRow]) -> frozenset[str]:
    """Which of dcode's tables the server has, found without making any: a server an earlier
    dcode set up lacks the tables of the migrations it did not know (``dcode_usage``)."""
    rows = conn.execute(
        "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
        (sorted(DCODE_TABLES),),
    ).fetchall()
    return frozenset(str(row["name"]) for row in rows)


def has_schema(conn: psycopg.Connection[DictRow]) -> bool:
    """Whether any dcode ever saved a session here (a reader makes nothing to find out)."""
    row = conn.execute("SELECT to_regclass('dcode_sessions') IS NOT NULL AS present").fetchone()
    return bool(row and row["present"])
