"""A real PostgreSQL server for the session-store tests, on a loopback port.

``.ci/run`` starts one (Debian's package, ``initdb`` into a temporary directory) and names it in
``DCODE_TEST_POSTGRES_URL``. Without that variable, the first test that asks starts a cluster of
its own from the installed server binaries, for the length of the run. Where neither is possible
the tests that need it skip, saying why. Each test gets a database of its own, dropped after it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

URL_VARIABLE = "DCODE_TEST_POSTGRES_URL"
SERVER_USER = "postgres"  # who runs the server when the tests run as root (it refuses root)
ROLE = "dcode"


@dataclass(frozen=True)
class Cluster:
    url: str
    """The maintenance database's address: ``postgresql://role@127.0.0.1:port/postgres``."""

    def database_url(self, name: str) -> str:
        return self.url.rsplit("/", 1)[0] + "/" + name


def server_binaries() -> Path | None:
    """The newest installed server's ``bin`` directory (Debian keeps it off ``PATH``)."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", SERVER_USER, "--", *command]


def start_cluster(directory: Path) -> tuple[Cluster, list[str]]:
    """``initdb`` into ``directory`` and start the server on a free loopback port; returns the
    cluster and the command that stops it. Raises ``RuntimeError`` saying why it could not."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server is installed (Debian: the postgresql package)")
    data = directory / "data"
    if os.geteuid() == 0:
        shutil.chown(directory, SERVER_USER)
    port = _free_port()
    steps = [
        [str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", ROLE, "-E", "UTF8"],
        [
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(directory / "server.log"),
            "-w",
            "-o",
            f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        ],
    ]
    for step in steps:
        done = subprocess.run(
            _as_server_user(step), capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{Path(step[0]).name} failed: {(done.stderr or done.stdout)[-400:]}"
            )
    stop = _as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"])
    return Cluster(f"postgresql://{ROLE}@127.0.0.1:{port}/postgres"), stop


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """The run's PostgreSQL server: ``$DCODE_TEST_POSTGRES_URL``, or one started here."""
    given = os.environ.get(URL_VARIABLE)
    if given:
        yield Cluster(given)
        return
    directory = Path(tempfile.mkdtemp(prefix="dcode-pg-"))
    try:
        cluster, stop = start_cluster(directory)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.skip(f"no PostgreSQL server could be started: {error}")
    try:
        yield cluster
    finally:
        subprocess.run(stop, capture_output=True, timeout=60, check=False)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> Iterator[str]:
    """A new, empty database on the run's server, dropped after the test."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (dcode[postgres])")
    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(postgres_cluster.url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_cluster.database_url(name)
    finally:
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(postgres_cluster.url, autocommit=True) as connection,
        ):
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
