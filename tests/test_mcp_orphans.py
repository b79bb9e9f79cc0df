"""No MCP stdio server outlives dcode: not after a normal exit, not after SIGTERM, not after
``kill -9`` (the parent-death signal child.py sets up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.mcp_fixtures import stdio_entry, wait_gone, write_config
from tests.support.model_server import reply, tool_call
from tests.test_exit_signals import read_pid, running, wait_for

DCODE = str(Path(sys.executable).with_name("dcode"))


@pytest.mark.parametrize("how", ["exit", "sigterm", "sigkill"])
def test_stdio_servers_end_with_dcode(server, workspace: Path, tmp_path: Path, how: str) -> None:
    home = tmp_path / "home"
    write_config(home / "mcp.json", {"calc": stdio_entry(), "other": stdio_entry()})
    if how == "exit":
        server.script(reply("nothing to do"))
    else:
        server.script(
            reply(tool_calls=[tool_call("mcp__calc__slow", {"seconds": 60})]), reply("done")
        )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "k",
    }
    argv = [
        DCODE,
        "-p",
        "wait",
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
    pid_files = [
        home / "mcp-logs" / f"calc.{proc.pid}.pid",
        home / "mcp-logs" / f"other.{proc.pid}.pid",
    ]
    pids: list[int] = []
    try:
        wait_for(
            lambda: all(read_pid(p) for p in pid_files) or proc.poll() is not None,
            60,
            "the servers to start",
        )
        pids = [read_pid(p) or 0 for p in pid_files]
        if how == "exit":
            _, stderr = proc.communicate(timeout=30)
            assert proc.returncode == 0, stderr
        else:
            wait_for(
                lambda: len(server.requests) >= 1 or proc.poll() is not None,
                30,
                "the model's first request",
            )
            assert all(running(pid) for pid in pids), proc.stderr.read() if proc.stderr else ""
            proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
            proc.communicate(timeout=15)
            assert proc.returncode == (
                128 + signal.SIGTERM if how == "sigterm" else -signal.SIGKILL
            )
        assert all(wait_gone(pid) for pid in pids)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in pids:
            if pid and running(pid):
                os.kill(pid, signal.SIGKILL)
