"""No process dcode started outlives it: not a ``setsid`` grandchild of a shell command, not an
MCP server's child that ignores SIGTERM; after a ``kill -9`` of dcode, the next start ends what
the dead one left (the real binary, real processes, the scripted model server).

Each end-to-end case runs twice where it matters: with the cgroup dcode makes for itself when
the machine lets it, and with ``DCODE_CGROUP=off`` (the subreaper and the recorded trees alone).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcode.processes.cgroup import usable_parent
from tests.support.headless_cli import headless_argv
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply, tool_call
from tests.test_exit_signals import read_pid, running, wait_for

GONE_WITHIN_S = 5.0
# A grandchild in a session of its own (out of the command's process group), ignoring SIGTERM,
# with a child of its own; both pids written down. "wait" keeps the command running.
ESCAPEE = "setsid sh -c 'trap \"\" TERM; sleep 300 & echo $! > sleep.pid; echo $$ > escapee.pid; wait' >/dev/null 2>&1 &"
WAIT_FOR_PIDS = "while [ ! -s sleep.pid ] || [ ! -s escapee.pid ]; do sleep 0.05; done"

CGROUP_MODES = [
    pytest.param(
        "auto",
        id="cgroup",
        marks=pytest.mark.skipif(
            usable_parent() is None,
            reason="no writable cgroup v2 here: the subreaper case covers this machine",
        ),
    ),
    pytest.param("off", id="subreaper"),
]


def dcode_env(tmp_path: Path, cgroup: str, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "k",
        **extra,
    }
    if cgroup == "off":
        env["DCODE_CGROUP"] = "off"
    return env


def headless(server, prompt: str) -> list[str]:
    return headless_argv(server.base_url, prompt, "--approve", "all")


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test saw started; whatever still runs at the end is killed, pass or fail."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def wait_gone(pids: list[int], what: str) -> None:
    wait_for(lambda: not any(running(pid) for pid in pids), GONE_WITHIN_S, what)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGHUP"])
@pytest.mark.parametrize("cgroup", CGROUP_MODES)
def test_a_setsid_grandchild_ends_when_dcode_is_signalled(
    server, workspace: Path, tmp_path: Path, leftovers: list[int], how: str, cgroup: str
) -> None:
    server.script(
        reply(
            tool_calls=[tool_call("execute", {"command": f"{ESCAPEE} {WAIT_FOR_PIDS}; sleep 60"})]
        ),
        reply("done"),
    )
    proc = subprocess.Popen(
        headless(server, "start a daemon"),
        cwd=workspace,
        env=dcode_env(tmp_path, cgroup),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids = _escapee_pids(workspace, proc, leftovers)
        signum = signal.Signals[how]
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 128 + signum, stderr
        wait_gone(pids, "the setsid grandchild and its child to end")
    finally:
        _stop(proc)


@pytest.mark.parametrize("cgroup", CGROUP_MODES)
def test_a_setsid_grandchild_ends_when_dcode_exits(
    server, workspace: Path, tmp_path: Path, leftovers: list[int], cgroup: str
) -> None:
    """The command has ended: the grandchild was adopted by dcode, which ends it on the way out."""
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": f"{ESCAPEE} {WAIT_FOR_PIDS}"})]),
        reply("done"),
    )
    proc = subprocess.Popen(
        headless(server, "start a daemon"),
        cwd=workspace,
        env=dcode_env(tmp_path, cgroup),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids = _escapee_pids(workspace, proc, leftovers)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        wait_gone(pids, "the setsid grandchild and its child to end")
    finally:
        _stop(proc)


@pytest.mark.parametrize("cgroup", CGROUP_MODES)
def test_an_mcp_servers_stubborn_child_ends_with_dcode(
    server, workspace: Path, tmp_path: Path, leftovers: list[int], cgroup: str
) -> None:
    stubborn = tmp_path / "stubborn.pid"
    write_config(
        tmp_path / "home" / "mcp.json", {"calc": stdio_entry("--stubborn-child", str(stubborn))}
    )
    server.script(reply("nothing to do"))
    proc = subprocess.Popen(
        headless(server, "hello"),
        cwd=workspace,
        env=dcode_env(tmp_path, cgroup),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        child = read_pid(stubborn)
        assert child is not None, stderr
        leftovers.append(child)
        wait_gone([child], "the MCP server's child to end")
    finally:
        _stop(proc)


@pytest.mark.parametrize("cgroup", CGROUP_MODES)
def test_after_kill_9_the_next_start_ends_what_was_left(
    server, workspace: Path, tmp_path: Path, leftovers: list[int], cgroup: str
) -> None:
    """dcode cannot act once killed: the MCP server's child and the shell's setsid grandchild
    survive it, and the next dcode on the same home ends them, saying so in one line."""
    stubborn = tmp_path / "stubborn.pid"
    write_config(
        tmp_path / "home" / "mcp.json", {"calc": stdio_entry("--stubborn-child", str(stubborn))}
    )
    env = dcode_env(tmp_path, cgroup)
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": f"{ESCAPEE} {WAIT_FOR_PIDS}"})]),
        reply(tool_calls=[tool_call("mcp__calc__slow", {"seconds": 60})]),
        reply("done"),
    )
    first = subprocess.Popen(
        headless(server, "leave things behind"),
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids = _escapee_pids(workspace, first, leftovers)
        wait_for(
            lambda: len(server.requests) >= 2 or first.poll() is not None,
            60,
            "the model to call the MCP tool",
        )
        # What the record holds is what the next start can act on: wait until it lists the grandchild.
        record = tmp_path / "home" / "processes" / f"{first.pid}.json"
        wait_for(
            lambda: record.exists() and f"[{pids[0]}, " in record.read_text(),
            30,
            "the grandchild to be recorded",
        )
        child = read_pid(stubborn)
        assert child is not None and running(child)
        leftovers.append(child)
        first.kill()
        first.communicate(timeout=15)
        assert all(running(pid) for pid in [*pids, child]), (
            "nothing survived the kill -9: the test proves nothing"
        )
    finally:
        _stop(first)
    server.script(reply("fresh start"))
    second = subprocess.run(
        [*headless(server, "again"), "--no-mcp"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    wait_gone([*pids, child], "the survivors of the killed dcode to end")
    notices = [line for line in second.stderr.splitlines() if "left running" in line]
    assert len(notices) == 1, second.stderr
    assert f"(pid {first.pid})" in notices[0]


def _escapee_pids(workspace: Path, proc: subprocess.Popen[str], leftovers: list[int]) -> list[int]:
    files = [workspace / "escapee.pid", workspace / "sleep.pid"]
    wait_for(
        lambda: all(read_pid(f) for f in files) or proc.poll() is not None,
        60,
        "the grandchild to start",
    )
    pids = [read_pid(f) or 0 for f in files]
    leftovers.extend(pids)
    assert all(running(pid) for pid in pids), (
        proc.stderr.read() if proc.stderr and proc.poll() is not None else "not running"
    )
    escapee = pids[0]
    assert os.getsid(escapee) == escapee  # out of the command's session and process group
    return pids


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
