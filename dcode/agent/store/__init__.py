"""Where dcode keeps its sessions: one interface (``base.SessionStore``), chosen here.

``open_store`` is the only place that knows which store the settings name; everything else
takes the ``SessionStore`` it is given. Light to import: ``dcode sessions list`` opens one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dcode.agent.store.base import SessionStore
    from dcode.settings.config import Settings

POSTGRES_MISSING = "sessions in PostgreSQL (database_url, DCODE_DATABASE_URL) need psycopg: install it with `pip install 'dcode[postgres]'`"


def open_store(settings: Settings, *, read_only: bool = False) -> SessionStore:
    """The store the settings name: a PostgreSQL server (``database_url``), else the SQLite
    file ``settings.sessions_db``. ``read_only``: one that never writes (``sessions show``)."""
    if settings.database_url:
        return _postgres(settings, read_only=read_only)
    from dcode.agent.store.sqlite import SqliteStore

    return SqliteStore(settings.sessions_db, settings.home, read_only=read_only)


def _postgres(settings: Settings, *, read_only: bool) -> SessionStore:
    from dcode.agent.store.base import SessionDatabaseError

    try:
        from dcode.agent.store.postgres import PostgresStore
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] in ("psycopg", "psycopg_pool", "langgraph"):
            raise SessionDatabaseError(POSTGRES_MISSING, damaged=False) from None
        raise
    assert settings.database_url is not None
    return PostgresStore(settings.database_url, settings.home, read_only=read_only)
