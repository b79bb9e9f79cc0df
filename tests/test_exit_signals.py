"""SIGTERM, SIGINT and SIGHUP to dcode end what the shell tool started, and dcode exits promptly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.model_server import reply, tool_call

DCODE = str(Path(sys.executable).with_name("dcode"))
# The model's command: a sleep in the background of the shell, its pid written down, then wait.
SLEEPER = "sleep 60 & echo $! > sleep.pid; wait"


def running(pid: int) -> bool:
    """Alive and not a zombie: an orphan may stay a zombie where nothing reaps it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name
)
def test_signal_to_headless_ends_the_shell_command(
    server, workspace: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    server.script(reply(tool_calls=[tool_call("execute", {"command": SLEEPER})]), reply("done"))
    home = tmp_path / "home"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "k",
    }
    argv = [
        DCODE,
        "-p",
        "sleep a while",
        "-m",
        "openai:test-model",
        "--base-url",
        server.base_url,
        "--api",
        "chat",
        "--approve",
        "all",
    ]
    proc = subprocess.Popen(
        argv, cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sleep_pid: int | None = None
    try:
        wait_for(
            lambda: read_pid(workspace / "sleep.pid") is not None or proc.poll() is not None,
            60,
            "the sleep to start",
        )
        sleep_pid = read_pid(workspace / "sleep.pid")
        assert sleep_pid is not None and running(sleep_pid), (
            proc.stderr.read() if proc.stderr else ""
        )
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=15)
        assert proc.returncode == 128 + signum, stderr
        assert stderr.strip().splitlines() == [f"dcode: stopped by {signum.name}"]
        wait_for(lambda: not running(sleep_pid), 5, "the sleep to end")
        listing = subprocess.run(
            [DCODE, "sessions", "list"],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "sleep a while" in listing.stdout  # the interrupted session was kept
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if sleep_pid is not None and running(sleep_pid):
            os.kill(sleep_pid, signal.SIGKILL)


# A front end that wedges while finishing (as a UI does whose writes to a closed terminal wait
# forever): the signal is handled, then the loop's thread blocks for good. A background job the
# process registered must still end with it.
WEDGED = """
import asyncio, subprocess, sys, threading
from dcode.processes.exit_signals import ExitSignals
from dcode.processes.trees import TREES

async def main():
    job = subprocess.Popen(["sleep", "60"], start_new_session=True)
    TREES.add(job.pid)
    loop = asyncio.get_running_loop()
    signals = ExitSignals(lambda _s: loop.call_soon(threading.Event().wait), deadline=0.5)
    signals.install()
    print(job.pid, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def test_an_exit_the_front_end_cannot_finish_is_forced_in_time() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", WEDGED],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    job = int(process.stdout.readline())
    try:
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 128 + signal.SIGTERM
        assert time.monotonic() - started < 5
        wait_for(lambda: not running(job), 5, "the registered job to end")
    finally:
        process.kill()
        process.stdout.close()
        if running(job):
            os.kill(job, signal.SIGKILL)
