"""Where dcode keeps its sessions: one interface (``base.SessionStore``), chosen here.

``open_store`` is the only place that knows which store the settings name; everything else
takes the ``SessionStore`` it is given. Light to import: ``dcode sessions list`` opens one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dcode.agent.store.base import SessionStore
    from dcode.settings.config import Settings


def open_store(settings: Settings, *, read_only: bool = False) -> SessionStore:
    """The store the settings name (today: the SQLite file ``settings.sessions_db``).
    ``read_only``: one that never writes (``sessions show``)."""
    from dcode.agent.store.sqlite import SqliteStore

    return SqliteStore(settings.sessions_db, settings.home, read_only=read_only)
