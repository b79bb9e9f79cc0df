"""dcode's own graph on a real ``langgraph dev``, started by ``dcode serve`` on loopback.

The session-scoped fixture ``langgraph_server`` starts ``dcode serve`` once for the test run,
on a free port, with a token, in a workspace and ``$DCODE_HOME`` of its own, and with the
scripted model server (``tests.support.model_server``) as its model; tests script that model
(``served.model.script(...)``, steps are appended) and drive the server with ``langgraph_sdk``,
the real client (``served.client()``). It skips, with one reason, where the extra
``dcode[server]`` is not installed.

The server's log is kept (``served.log``): ``served.blocking_calls()`` lists what the dev
server's blocking-call detector reported, which must stay empty. ``served.restart()`` stops the
server and starts it again on the same address, with the same state (``kill=True``: with
``SIGKILL``, as a crash would). ``tests.support.aegra_server`` serves the same graph on Aegra
with the same ``ServedDcode``, so that one suite runs against both.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from dcode.server.options import ASSISTANT_ID, CLIENT_TOKEN_ENV
from dcode.settings.database import DATABASE_URL_ENV
from tests.support.model_server import ScriptedModelServer

TOKEN = "served-test-token"
START_TIMEOUT = 180.0
"""Seconds the server may take to start: ~3 s alone, much more on a busy 2-core machine."""
STOP_TIMEOUT = 30.0
"""Seconds a server may take to stop before it is killed."""
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServedDcode:
    url: str
    token: str
    workspace: Path
    home: Path
    model: ScriptedModelServer
    log: Path
    process: subprocess.Popen[bytes]
    started_in: float
    """Seconds from starting ``dcode serve`` to its first answer on ``/ok``."""
    assistant: str = ASSISTANT_ID
    kind: str = "langgraph-dev"
    """Which server: ``langgraph-dev`` or ``aegra``."""
    launch: Callable[[], subprocess.Popen[bytes]] | None = None
    """Starts the server again, as it was started (for ``restart``)."""
    ready_path: str = "/ok"
    database_url: str = ""
    """Aegra's PostgreSQL database (its threads, runs and checkpoints)."""

    def restart(self, *, kill: bool = False) -> float:
        """Stop the server (``kill``: ``SIGKILL`` to its process group, as a crash) and start it
        again on the same address; returns the seconds it took to answer again."""
        assert self.launch is not None, "this server cannot be restarted"
        stop_group(self.process, signal.SIGKILL if kill else signal.SIGTERM)
        started = time.monotonic()
        self.process = self.launch()
        wait_ready(self.url + self.ready_path, self.process, self.log)
        return time.monotonic() - started

    def client(self, token: str | None = TOKEN) -> Any:
        from langgraph_sdk import get_client

        headers = {"Authorization": f"Bearer {token}"} if token is not None else None
        return get_client(url=self.url, headers=headers)

    def blocking_calls(self) -> list[str]:
        """The lines of the server's log where its detector caught a blocking call."""
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if "BlockingError" in line]


def stop_group(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Stop the server and whatever it started, and wait until all of them are gone
    (``aegra serve`` runs uvicorn as a child, which drains its runs before it lets go of the
    port: a server started again before that would share the address with a dying one)."""
    with suppress(ProcessLookupError):  # its group outlives it while a child runs
        os.killpg(process.pid, sig)
    deadline = time.monotonic() + STOP_TIMEOUT
    while _group_alive(process):
        if time.monotonic() > deadline:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        time.sleep(0.05)


def _group_alive(process: subprocess.Popen[bytes]) -> bool:
    process.poll()  # reaps the leader once it has exited
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Until ``url`` answers 200; raises with the log's tail if the server exits first."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer within {START_TIMEOUT:.0f} s")


def serve_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (DATABASE_URL_ENV, CLIENT_TOKEN_ENV)}
    env.update(
        DCODE_HOME=str(home),
        OPENAI_API_KEY="test-key",
        PYTHONPATH=str(REPO),
        NO_COLOR="1",
    )
    env.update(extra or {})
    return env


def require_server_extra() -> None:
    if find_spec("langgraph_api") is None or find_spec("langgraph_cli") is None:
        pytest.skip("the server extra is not installed: pip install 'dcode[server]'")


@contextmanager
def serve_dcode(
    root: Path, model: ScriptedModelServer, env: dict[str, str] | None = None, *, config: str = ""
) -> Iterator[ServedDcode]:
    """``dcode serve`` in ``root/workspace`` with ``root/home``, until the block ends;
    ``env``: more of the server's environment (``DCODE_DATABASE_URL``, say); ``config``: its
    ``config.toml``."""
    workspace, home = root / "workspace", root / "home"
    workspace.mkdir()
    home.mkdir()
    if config:
        (home / "config.toml").write_text(config)
    log = root / "server.log"
    port = free_port()
    argv = [
        *(sys.executable, "-m", "dcode.cli.app", "serve"),
        *("--port", str(port), "--token", TOKEN),
        *("-m", "openai:test-model", "--base-url", model.base_url, "--api", "chat"),
    ]
    launch = launcher(argv, workspace, serve_env(home, env), log)
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    served = ServedDcode(url, TOKEN, workspace, home, model, log, launch(), 0.0, launch=launch)
    try:
        wait_ready(f"{url}/ok", served.process, log)
        served.started_in = time.monotonic() - started
        yield served
    finally:
        stop_group(served.process)


def launcher(
    argv: list[str], cwd: Path, env: dict[str, str], log: Path
) -> Callable[[], subprocess.Popen[bytes]]:
    """Starts ``argv`` in a process group of its own, its output appended to ``log``."""

    def launch() -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            return subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    return launch


@pytest.fixture(scope="session")
def langgraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedDcode]:
    require_server_extra()
    with (
        ScriptedModelServer() as model,
        serve_dcode(tmp_path_factory.mktemp("served"), model) as served,
    ):
        yield served
