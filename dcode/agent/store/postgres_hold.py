"""One process holds a session at a time, on the PostgreSQL store: a session-level advisory lock.

``pg_try_advisory_lock`` on a connection of the hold's own, kept open for as long as the
session is held. The server drops the lock with the connection, however its process ends:
a ``kill -9`` or a crash closes the socket at once; a machine that vanishes (power, network)
is found out by TCP keepalives, which the hold asks the server to send early
(``KEEPALIVES``), so its sessions are free again within about two minutes rather than hours.
There is no lease to renew, and no expiry to get wrong for a long turn.

The holder names itself in its connection's ``application_name`` (``dcode PID``), only so that
a refused process can say who has the session, as the file lock does on one machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from types import TracebackType

import psycopg
from psycopg.rows import DictRow

from dcode.agent.store.base import SessionHeld
from dcode.agent.store.postgres_server import connect, server_errors, with_settings

APPLICATION = "dcode"
KEEPALIVES = "-c tcp_keepalives_idle=60 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=6"


def lock_key(session_id: str) -> int:
    """The session's advisory lock: 64 bits of its id's digest, as the signed key Postgres takes."""
    return int.from_bytes(hashlib.sha256(session_id.encode()).digest()[:8], "big", signed=True)


class AdvisoryHold:
    """A held session; ``release()`` (or leaving the ``with``) lets the next process have it."""

    def __init__(self, session_id: str, conn: psycopg.Connection[DictRow], url: str) -> None:
        self.session_id = session_id
        self.url = url
        self._conn: psycopg.Connection[DictRow] | None = conn
        self._released = False

    @classmethod
    def acquire(cls, url: str, session_id: str) -> AdvisoryHold:
        """Hold ``session_id`` for this process, or raise ``SessionHeld`` at once (never waits)."""
        return cls(session_id, _locked(url, session_id), url)

    def confirm(self) -> None:
        """The lock lives as long as its connection: a connection the server dropped (a
        restart, ``pg_terminate_backend``, a network cut) took the lock with it, and another
        process may have the session now. Take it again on a new connection, or raise
        ``SessionHeld`` (and again at the next turn). A released hold stays released."""
        if self._released:
            return
        conn = self._conn
        if conn is not None:
            try:
                conn.execute("SELECT 1")
                return
            except psycopg.Error:
                conn.close()
        self._conn = None
        self._conn = _locked(self.url, self.session_id)

    @property
    def held(self) -> bool:
        return self._conn is not None and not self._conn.closed

    def release(self) -> None:
        """Let the session go; twice is harmless. Unlocked before the connection closes: the
        server ends a closed connection's backend (and drops its locks) a moment later, and
        the next process may be asking already. A connection already gone holds nothing."""
        self._released = True
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key(self.session_id),))
        finally:
            conn.close()

    def __enter__(self) -> AdvisoryHold:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _locked(url: str, session_id: str) -> psycopg.Connection[DictRow]:
    """A new connection holding ``session_id``'s lock, or ``SessionHeld`` (never waits)."""
    with server_errors(url):
        conninfo = with_settings(url, KEEPALIVES)
    conn = connect(url, conninfo=conninfo, application_name=f"{APPLICATION} {os.getpid()}")
    try:
        with server_errors(url):
            key = lock_key(session_id)
            row = conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (key,)).fetchone()
            if row is None or not row["got"]:
                raise SessionHeld(session_id, _holder_pid(conn, key))
    except BaseException:
        conn.close()
        raise
    return conn


def _holder_pid(conn: psycopg.Connection[DictRow], key: int) -> int | None:
    """The pid the holding dcode named itself by; None when it cannot be seen (another role's
    connection may hide it)."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    row = conn.execute(
        """SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
             AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid
           LIMIT 1""",
        (unsigned >> 32, unsigned & 0xFFFFFFFF),
    ).fetchone()
    name = str(row["name"] or "") if row else ""
    word, _, pid = name.partition(" ")
    return int(pid) if word == APPLICATION and pid.isdigit() else None
