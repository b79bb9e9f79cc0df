"""The registry of the trees the shell tool started, which dcode ends on a timeout and at exit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dcode.agent.backends import LocalBackend
from dcode.processes import ending, table
from dcode.processes.table import Proc
from dcode.processes.trees import TREES, ProcessTrees
from tests.test_exit_signals import read_pid, running, wait_for


async def test_registry_ends_a_background_job_that_outlived_its_command(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    result = await backend.execute("sleep 60 >/dev/null 2>&1 & echo $!")
    pid = int(result.output.strip())
    assert running(pid)  # a background job outlives the command, by design
    assert os.getpgid(pid) in TREES.live()
    TREES.end_sessions()
    await asyncio.to_thread(wait_for, lambda: not running(pid), 5, "the background job to end")


def test_a_group_is_forgotten_once_empty() -> None:
    trees = ProcessTrees()
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    trees.add(proc.pid)
    assert trees.live() == {proc.pid}
    proc.kill()
    proc.wait()
    assert trees.live() == frozenset()


def test_ending_kills_what_ignores_sigterm() -> None:
    trees = ProcessTrees()
    proc = subprocess.Popen(
        ["bash", "-c", "trap '' TERM; echo ready; sleep 60 & wait"],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    trees.add(proc.pid)
    trees.end_sessions(grace=0.2)
    assert proc.wait(timeout=5) == -signal.SIGKILL
    proc.stdout.close()


async def test_a_timeout_ends_what_left_the_commands_session(tmp_path: Path) -> None:
    """A ``setsid`` grandchild is out of the command's process group: killing the group missed it."""
    command = (
        "setsid sh -c 'trap \"\" TERM; echo $$ > escapee.pid; sleep 300' >/dev/null 2>&1 & sleep 60"
    )
    result = await LocalBackend(tmp_path).execute(command, timeout=2)
    assert result.timed_out
    escapee = read_pid(tmp_path / "escapee.pid")
    assert escapee is not None
    try:
        await asyncio.to_thread(
            wait_for, lambda: not running(escapee), 5, "the setsid grandchild to end"
        )
    finally:
        if running(escapee):
            os.kill(escapee, signal.SIGKILL)


async def test_a_cancelled_command_takes_its_escapees_down(tmp_path: Path) -> None:
    command = "setsid sh -c 'echo $$ > escapee.pid; sleep 300' >/dev/null 2>&1 & sleep 60"
    task = asyncio.create_task(LocalBackend(tmp_path).execute(command, timeout=120))
    await asyncio.to_thread(
        wait_for,
        lambda: read_pid(tmp_path / "escapee.pid") is not None,
        30,
        "the grandchild to start",
    )
    escapee = read_pid(tmp_path / "escapee.pid")
    assert escapee is not None and running(escapee)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    try:
        await asyncio.to_thread(
            wait_for, lambda: not running(escapee), 5, "the setsid grandchild to end"
        )
    finally:
        if running(escapee):
            os.kill(escapee, signal.SIGKILL)


def test_without_proc_whole_groups_are_ended() -> None:
    """Where ``/proc`` cannot be read, the process groups are what is left to go by."""
    proc = subprocess.Popen(
        ["bash", "-c", "trap '' TERM; echo ready; sleep 60 & wait"],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    ending.end_groups([proc.pid], grace=0.2)
    assert proc.wait(timeout=5) == -signal.SIGKILL
    proc.stdout.close()


def _children_first(leaders: list[int]) -> list[Proc]:
    """The trees of ``leaders``, each child listed before its parent: the order that lets a
    shell outlive its child's signal if ending followed it."""
    procs = table.snapshot()
    found = set(leaders) | table.descendants(procs, leaders)
    return sorted((procs[pid] for pid in found if pid in procs), key=lambda p: -p.start)


@pytest.mark.parametrize("signals", ["TERM then KILL", "KILL now"])
def test_a_parent_is_signalled_before_its_child(tmp_path: Path, signals: str) -> None:
    """A shell in ``sleep 30; touch done`` whose sleep died first would run ``touch``; ending
    parents first leaves it no moment to do so, whatever order the trees are found in."""
    markers = [tmp_path / f"done-{n}" for n in range(8)]
    shells = [
        subprocess.Popen(["sh", "-c", f"sleep 30; touch {marker}"], start_new_session=True)
        for marker in markers
    ]
    leaders = [shell.pid for shell in shells]
    wait_for(
        lambda: all(table.descendants(table.snapshot(), [pid]) for pid in leaders),
        5,
        "each shell to start its sleep",
    )
    if signals == "KILL now":
        ending.kill_now(lambda: _children_first(leaders))
    else:
        ending.end(lambda: _children_first(leaders), grace=0.3)
    for shell in shells:
        shell.wait(timeout=5)
    time.sleep(0.3)  # a shell that outlived its sleep has long since run `touch` by now
    assert [m.name for m in markers if m.exists()] == []
