"""The session stores the session tests run against, and how a test's settings name one.

``STORES`` parametrizes the ``store`` fixture (``tests/conftest.py``): every test that asks for
``store`` (or ``store_kind``) runs once per entry, and ``make_settings`` then gives settings
that name the same store, so an engine the test opens writes where ``store`` reads. Adding a
store is one entry here and one case in ``configured``.
"""

from __future__ import annotations

from dcode.settings.config import Settings

STORES = ["sqlite"]


def configured(settings: Settings, kind: str) -> Settings:
    """``settings`` naming store ``kind``: SQLite is the home's ``sessions.db``, as it is."""
    if kind == "sqlite":
        return settings
    raise ValueError(f"no such store in the tests: {kind}")
