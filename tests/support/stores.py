"""The session stores the session tests run against, and how a test's settings name one.

``STORES`` parametrizes the ``store`` fixture (``tests/conftest.py``): every test that asks for
``store`` (or ``store_kind``) runs once per entry, and ``make_settings`` then gives settings
that name the same store, so an engine the test opens writes where ``store`` reads. Adding a
store is one entry here and one case in ``configured`` (and, for a server, in the
``store_kind`` fixture).
"""

from __future__ import annotations

import os
from dataclasses import replace

from dcode.settings.config import Settings
from dcode.settings.database import DATABASE_URL_ENV

STORES = ["sqlite", "postgres"]


def configured(settings: Settings, kind: str) -> Settings:
    """``settings`` naming store ``kind``: SQLite is the home's ``sessions.db``, as it is;
    Postgres is the test's own database, which the ``store_kind`` fixture names in
    ``DCODE_DATABASE_URL`` (so that a dcode the test starts in a process of its own, or loads
    its settings from the environment, finds it too)."""
    if kind == "sqlite":
        return replace(settings, database_url=None)
    if kind == "postgres":
        return replace(settings, database_url=os.environ[DATABASE_URL_ENV])
    raise ValueError(f"no such store in the tests: {kind}")


def store_env() -> dict[str, str]:
    """What a dcode started with an environment of the test's own needs to find the test's
    store: ``DCODE_DATABASE_URL`` when ``store_kind`` names a server, else nothing."""
    url = os.environ.get(DATABASE_URL_ENV)
    return {DATABASE_URL_ENV: url} if url else {}
