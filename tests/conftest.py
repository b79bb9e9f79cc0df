"""Shared fixtures: a scripted model server and settings pointing dcode at it."""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from dcode.agent.store import open_store
from dcode.agent.store.base import SessionStore
from dcode.settings.config import ApprovalMode, Settings, WireApi
from dcode.settings.database import DATABASE_URL_ENV
from tests.support.aegra_server import aegra_server  # noqa: F401 - fixture
from tests.support.corpus import CORPUS  # noqa: F401 - where the real-world test files are (tests/support/corpus.py)
from tests.support.langgraph_server import langgraph_server, served  # noqa: F401 - fixtures
from tests.support.model_server import ScriptedModelServer
from tests.support.postgres import postgres_cluster, postgres_url  # noqa: F401 - fixtures
from tests.support.stores import STORES, configured

EXIT_GRACE = 60.0  # seconds the interpreter may take to exit once the run is over


def _database_threads() -> set[threading.Thread]:
    """aiosqlite's worker threads: one per open connection, and none of them daemons."""
    return {
        t for t in threading.enumerate() if t.is_alive() and "_connection_worker_thread" in t.name
    }


@pytest.fixture(autouse=True)
def no_leaked_database_connections() -> Iterator[None]:
    """A session database left open keeps its thread, and the thread keeps the process alive."""
    before = _database_threads()
    yield
    deadline = time.monotonic() + 2.0
    leaked = _database_threads() - before
    while leaked and time.monotonic() < deadline:
        time.sleep(0.02)
        leaked = _database_threads() - before
    assert not leaked, f"{len(leaked)} session database connection(s) left open"


def pytest_unconfigure(config: pytest.Config) -> None:
    """Never let a stray non-daemon thread turn a finished run into a hung one."""

    def watchdog() -> None:
        time.sleep(EXIT_GRACE)
        names = [
            t.name
            for t in threading.enumerate()
            if not t.daemon and t is not threading.main_thread()
        ]
        sys.stderr.write(
            f"\ntests finished but the process did not exit; threads still alive: {names}\n"
        )
        faulthandler.dump_traceback(all_threads=True)
        sys.stderr.flush()
        os._exit(3)

    threading.Thread(target=watchdog, name="exit-watchdog", daemon=True).start()


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as running:
        yield running


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Where ``$DCODE_HOME`` points, for tests that hand dcode its environment themselves (a
    subprocess, ``load_settings(env=...)``); ``dcode_home`` also sets it in this process."""
    return tmp_path / "home"


@pytest.fixture
def dcode_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("DCODE_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("DCODE_MODEL", raising=False)
    return home


@pytest.fixture(autouse=True)
def session_database_of_the_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``DCODE_DATABASE_URL`` from the shell running the tests: a test's dcode keeps its
    sessions in its home's SQLite file unless the test's ``store_kind`` names a server."""
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which session store a test runs against (``tests/support/stores.py``); for Postgres, a
    new database of the run's server, named in ``DCODE_DATABASE_URL`` for the test."""
    kind = str(request.param)
    if kind == "postgres":
        monkeypatch.setenv(DATABASE_URL_ENV, str(request.getfixturevalue("postgres_url")))
    return kind


def _kind(request: pytest.FixtureRequest) -> str:
    """The test's store: its ``store_kind`` when it asks for one, else SQLite."""
    return (
        str(request.getfixturevalue("store_kind"))
        if "store_kind" in request.fixturenames
        else "sqlite"
    )


@pytest.fixture
def store(dcode_home: Path, workspace: Path, store_kind: str) -> Iterator[SessionStore]:
    """The session store of the test's ``$DCODE_HOME``, once per store in ``STORES``; what
    ``make_settings`` gives names the same one."""
    opened = open_store(configured(Settings(home=dcode_home, workspace=workspace), store_kind))
    yield opened
    opened.close()


@pytest.fixture
def make_settings(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, request: pytest.FixtureRequest
) -> Callable[..., Settings]:
    kind = _kind(request)

    def build(api: WireApi | str = WireApi.CHAT, **changes: object) -> Settings:
        base = Settings(
            home=dcode_home,
            workspace=workspace,
            model="openai:test-model",
            base_url=server.base_url,
            api=WireApi(api),
            approve=ApprovalMode.EDITS,
            max_retries=2,
        )
        return configured(replace(base, **changes), kind)

    return build


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    return request.param
