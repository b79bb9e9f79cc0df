"""A second loopback server for the async task tests: ``langgraph dev`` serving the tiny echo
graph of ``tests/fixtures/agent_protocol`` (not dcode's own graph).

It runs offline (no analytics, no version check), without reloading or a browser, on a free
port, from a copy of the fixture in a temporary folder (the server writes its state beside the
graph). ``langgraph_server`` skips with one reason when ``dcode[server]`` is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "agent_protocol"
ASSISTANT = "echo"
READY_SECONDS = 60.0
DEV_FLAGS = ("--no-reload", "--no-browser", "--config", "langgraph.json")


@dataclass(frozen=True)
class AgentProtocolServer:
    url: str
    assistant: str
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"langgraph dev exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"langgraph dev was not ready in {READY_SECONDS:g}s")


@contextmanager
def serving(folder: Path) -> Iterator[AgentProtocolServer]:
    """``langgraph dev`` serving a copy of the fixture from ``folder``, until the block ends."""
    shutil.copytree(FIXTURE, folder / "graph")
    port, log = free_port(), folder / "server.log"
    cli = Path(sys.executable).with_name("langgraph")
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(cli), "dev", "--host", "127.0.0.1", "--port", str(port), *DEV_FLAGS],
            cwd=folder / "graph",
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _ready(url, process, log)
        yield AgentProtocolServer(url, ASSISTANT, log)
    finally:
        with suppress(ProcessLookupError):  # the server's own group, started above
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def needs_langgraph_dev() -> None:
    if importlib.util.find_spec("langgraph_api") is None:
        pytest.skip("langgraph dev is not installed: pip install -e '.[server]'")


@pytest.fixture(scope="module")
def langgraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentProtocolServer]:
    needs_langgraph_dev()
    with serving(tmp_path_factory.mktemp("agent-protocol")) as server:
        yield server
