"""The shell runner's registry of live process groups, which dcode ends when it exits."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.shell import LIVE_GROUPS, ProcessGroups
from tests.test_exit_signals import running, wait_for


async def test_registry_ends_a_background_job_that_outlived_its_command(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    result = await backend.execute("sleep 60 >/dev/null 2>&1 & echo $!")
    pid = int(result.output.strip())
    assert running(pid)  # a background job outlives the command, by design
    assert os.getpgid(pid) in LIVE_GROUPS.live()
    LIVE_GROUPS.end_all()
    await asyncio.to_thread(wait_for, lambda: not running(pid), 5, "the background job to end")


def test_a_group_is_forgotten_once_empty() -> None:
    groups = ProcessGroups()
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    groups.add(proc.pid)
    assert groups.live() == {proc.pid}
    proc.kill()
    proc.wait()
    assert groups.live() == frozenset()


def test_end_all_kills_what_ignores_sigterm() -> None:
    groups = ProcessGroups()
    proc = subprocess.Popen(["bash", "-c", "trap '' TERM; echo ready; sleep 60 & wait"], start_new_session=True, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    groups.add(proc.pid)
    groups.end_all(grace=0.2)
    assert proc.wait(timeout=5) == -signal.SIGKILL
    proc.stdout.close()
