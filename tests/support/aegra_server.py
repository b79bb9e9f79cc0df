"""dcode's own graph on Aegra (Apache-2.0), with PostgreSQL and Redis, on loopback.

Aegra needs Python >= 3.12, so it lives in a virtual environment of its own, with dcode installed
into it (``.ci/run`` makes one and names its ``aegra`` executable in ``DCODE_TEST_AEGRA``;
nothing is installed at test time). The session-scoped fixture ``aegra_server`` starts, for the
test run: a ``redis-server`` on a free port, a database of its own on the run's PostgreSQL
(``tests.support.postgres``), and ``aegra serve -c dcode/server/aegra.json`` in a workspace of
its own, with the scripted model server as its model and the same token as ``dcode serve``'s.
It yields the same ``ServedDcode`` as ``langgraph_server``, so one suite drives both servers.
It skips with one reason where Python 3.12, Aegra, Redis or PostgreSQL is missing.

Aegra keeps threads, runs and checkpoints in its PostgreSQL database (its own checkpointer:
``langgraph.json``'s ``checkpointer`` does not apply there). Its workers are coroutines of the
server process, which takes a run's lease and renews it every ``HEARTBEAT_INTERVAL_SECONDS``;
the lease timings here are short so that a run whose server was killed is taken up again within
seconds of a restart rather than a minute.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dcode.server.options import (
    AEGRA_CONFIG_FILE,
    API_ENV,
    BASE_URL_ENV,
    MODEL_ENV,
    TOKEN_ENV,
    WORKSPACE_ENV,
)
from tests.support.langgraph_server import (
    TOKEN,
    ServedDcode,
    free_port,
    launcher,
    serve_env,
    stop_group,
    wait_ready,
)
from tests.support.model_server import ScriptedModelServer
from tests.support.postgres import Cluster

AEGRA_VARIABLE = "DCODE_TEST_AEGRA"
"""The ``aegra`` executable of a Python 3.12 environment that has Aegra and dcode installed."""
JOBS_PER_WORKER = 20
LEASE = {
    "HEARTBEAT_INTERVAL_SECONDS": "1",
    "LEASE_DURATION_SECONDS": "3",
    "REAPER_INTERVAL_SECONDS": "1",
}
"""A killed server's runs are re-queued ~3 s after their last heartbeat (defaults: 30 s + 15 s)."""


def python312() -> str | None:
    """A Python 3.12 that runs (pyenv's shim is on ``PATH`` even where it cannot run one)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [
        shutil.which("python3.12"),
        *map(str, pyenv.glob("versions/3.12*/bin/python3.12")),
    ]
    for candidate in filter(None, candidates):
        done = subprocess.run(
            [candidate, "-c", "import sys; sys.exit(sys.version_info < (3, 12))"],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return candidate
    return None


class AegraMissing(RuntimeError):
    """What is missing for a server on Aegra, in one line."""


def find_aegra() -> Path:
    """Aegra's ``aegra`` command; raises ``AegraMissing`` saying which part is missing."""
    given = os.environ.get(AEGRA_VARIABLE, "")
    if not given:
        if python312() is None:
            raise AegraMissing("Aegra needs Python >= 3.12, which is not installed")
        raise AegraMissing(
            f"Aegra is not installed: set {AEGRA_VARIABLE} to its aegra command (.ci/run makes one)"
        )
    path = Path(given)
    if path.is_dir():
        path = path / "bin" / "aegra"
    if not path.is_file():
        raise AegraMissing(f"{AEGRA_VARIABLE}={given} is not Aegra's aegra executable")
    if shutil.which("redis-server") is None:
        raise AegraMissing(
            "Aegra needs Redis: redis-server is not installed (Debian: redis-server)"
        )
    return path


def start_redis(directory: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """A ``redis-server`` on a free loopback port, without persistence."""
    port = free_port()
    log = directory / "redis.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(directory)),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while "Ready to accept connections" not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_group(process)
            raise RuntimeError(f"redis-server did not start: {log.read_text()[-1000:]}")
        time.sleep(0.05)
    return f"redis://127.0.0.1:{port}/0", process


def new_database(cluster: Cluster) -> str:
    import psycopg

    name = "aegra_" + uuid.uuid4().hex[:12]
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return cluster.database_url(name)


def aegra_env(
    home: Path, workspace: Path, model: ScriptedModelServer, **urls: str
) -> dict[str, str]:
    """Aegra's settings and dcode's (what ``dcode serve`` would set), for one server."""
    return serve_env(
        home,
        {
            "DATABASE_URL": urls["database"],
            "REDIS_BROKER_ENABLED": "true",
            "REDIS_URL": urls["redis"],
            "N_JOBS_PER_WORKER": str(JOBS_PER_WORKER),
            **LEASE,
            "LANGSMITH_TRACING": "false",
            WORKSPACE_ENV: str(workspace),
            MODEL_ENV: "openai:test-model",
            BASE_URL_ENV: model.base_url,
            API_ENV: "chat",
            TOKEN_ENV: TOKEN,
        },
    )


@contextmanager
def serve_on_aegra(
    root: Path,
    aegra: Path,
    cluster_url: str,
    model: ScriptedModelServer,
    config: Path = AEGRA_CONFIG_FILE,
) -> Iterator[ServedDcode]:
    """``aegra serve`` of dcode's graph in ``root/workspace``, with a Redis of its own and a new
    database on the PostgreSQL server at ``cluster_url``, until the block ends; ``config``:
    Aegra's config (dcode's ``aegra.json``; a bench's serves more graphs)."""
    workspace, home = root / "workspace", root / "home"
    workspace.mkdir()
    home.mkdir()
    redis_url, redis = start_redis(root)
    try:
        database = new_database(Cluster(cluster_url))
        env = aegra_env(home, workspace, model, database=database, redis=redis_url)
        port, log = free_port(), root / "server.log"
        argv = [str(aegra), "serve", "--host", "127.0.0.1", "--port", str(port)]
        launch = launcher([*argv, "-c", str(config)], workspace, env, log)
        url = f"http://127.0.0.1:{port}"
        started = time.monotonic()
        served = ServedDcode(url, TOKEN, workspace, home, model, log, launch(), 0.0)
        served.kind, served.launch, served.ready_path = "aegra", launch, "/health"
        served.database_url = database
        try:
            wait_ready(url + served.ready_path, served.process, log)
            served.started_in = time.monotonic() - started
            yield served
        finally:
            stop_group(served.process)
    finally:
        stop_group(redis)


@pytest.fixture(scope="session")
def aegra_server(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ServedDcode]:
    try:
        aegra = find_aegra()
    except AegraMissing as missing:
        pytest.skip(str(missing))
    cluster: Cluster = request.getfixturevalue("postgres_cluster")
    with (
        ScriptedModelServer() as model,
        serve_on_aegra(tmp_path_factory.mktemp("aegra"), aegra, cluster.url, model) as served,
    ):
        yield served
