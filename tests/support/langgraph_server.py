"""dcode's own graph on a real ``langgraph dev``, started by ``dcode serve`` on loopback.

The session-scoped fixture ``langgraph_server`` starts ``dcode serve`` once for the test run,
on a free port, with a token, in a workspace and ``$DCODE_HOME`` of its own, and with the
scripted model server (``tests.support.model_server``) as its model; tests script that model
(``served.model.script(...)``, steps are appended) and drive the server with ``langgraph_sdk``,
the real client (``served.client()``). It skips, with one reason, where the extra
``dcode[server]`` is not installed.

The server's log is kept (``served.log``): ``served.blocking_calls()`` lists what the dev
server's blocking-call detector reported, which must stay empty.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
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

    def client(self, token: str | None = TOKEN) -> Any:
        from langgraph_sdk import get_client

        headers = {"Authorization": f"Bearer {token}"} if token is not None else None
        return get_client(url=self.url, headers=headers)

    def blocking_calls(self) -> list[str]:
        """The lines of the server's log where its detector caught a blocking call."""
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if "BlockingError" in line]


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"dcode serve exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"dcode serve did not answer within {START_TIMEOUT:.0f} s")


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
    root: Path, model: ScriptedModelServer, env: dict[str, str] | None = None
) -> Iterator[ServedDcode]:
    """``dcode serve`` in ``root/workspace`` with ``root/home``, until the block ends;
    ``env``: more of the server's environment (``DCODE_DATABASE_URL``, say)."""
    workspace, home = root / "workspace", root / "home"
    workspace.mkdir()
    home.mkdir()
    log = root / "server.log"
    port = free_port()
    with log.open("wb") as out:
        argv = [
            *(sys.executable, "-m", "dcode.cli.app", "serve"),
            *("--port", str(port), "--token", TOKEN),
            *("-m", "openai:test-model", "--base-url", model.base_url, "--api", "chat"),
        ]
        started = time.monotonic()
        process = subprocess.Popen(
            argv, cwd=workspace, env=serve_env(home, env), stdout=out, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, process, log)
            yield ServedDcode(
                url, TOKEN, workspace, home, model, log, process, time.monotonic() - started
            )
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="session")
def langgraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedDcode]:
    require_server_extra()
    with (
        ScriptedModelServer() as model,
        serve_dcode(tmp_path_factory.mktemp("served"), model) as served,
    ):
        yield served
