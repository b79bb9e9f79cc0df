"""A file-system call stuck in the kernel: the caller gets an error at the deadline, and the
process still exits (on SIGTERM too) while the call stays stuck.

The stuck call is real: opening a named pipe for reading without ``O_NONBLOCK`` blocks in the
kernel until a writer comes, like a read from a stalled network mount.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

import pytest

from dcode.agent.backends.deadline import call_with_deadline
from tests.support.hostile_files import fifo
from tests.test_media_fixtures import PROJECT_ROOT


async def test_a_stuck_call_fails_at_its_deadline_and_a_late_result_is_discarded(
    tmp_path: Path,
) -> None:
    pipe = fifo(tmp_path / "mount")
    late: list[BinaryIO] = []
    started = time.monotonic()
    with pytest.raises(TimeoutError) as caught:
        await call_with_deadline(open, pipe, "rb", seconds=0.3, path=pipe, discard=late.append)
    assert caught.value.errno == errno.ETIMEDOUT and caught.value.filename == str(pipe)
    assert (
        caught.value.strerror
        == "the file system did not answer within 0.3 s (a stalled network or removable drive?)"
    )
    assert time.monotonic() - started < 5
    # A writer arrives: the abandoned open completes on its thread, and what it opened is
    # handed to ``discard`` (the backend closes it there), not left to leak.
    writer = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
    try:
        for _ in range(500):
            await asyncio.sleep(0.01)
            if late:
                break
        assert len(late) == 1 and late[0].name == str(pipe)
    finally:
        os.close(writer)
        for handle in late:
            handle.close()


async def test_errors_and_results_come_back_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"abc")
    assert await call_with_deadline((tmp_path / "a").read_bytes, seconds=5, path=tmp_path) == b"abc"
    with pytest.raises(FileNotFoundError) as caught:
        await call_with_deadline(os.stat, tmp_path / "missing", seconds=5, path=tmp_path)
    assert caught.value.filename == str(tmp_path / "missing")


async def test_a_stuck_call_does_not_hold_up_the_next_ones(tmp_path: Path) -> None:
    pipe = fifo(tmp_path / "mount")
    stuck = asyncio.ensure_future(
        call_with_deadline(
            open, pipe, "rb", seconds=30, path=pipe, discard=lambda late: late.close()
        )
    )
    await asyncio.sleep(0.1)
    for _ in range(20):  # served by other threads, at once
        assert (
            await call_with_deadline(os.stat, tmp_path, seconds=5, path=tmp_path)
        ).st_ino == tmp_path.stat().st_ino
    assert not stuck.done()
    stuck.cancel()
    os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))  # let the abandoned open finish


# The way ``dcode -p`` runs a turn: the turn is a task an exit signal cancels.
STUCK_READER = """
import asyncio, sys
from dcode.agent.backends.deadline import call_with_deadline
from dcode.processes.exit_signals import ExitSignals

async def main(pipe):
    task = asyncio.current_task()
    signals = ExitSignals(lambda _signum: task.cancel())
    signals.install()
    print("reading", flush=True)
    try:
        await call_with_deadline(open, pipe, "rb", seconds=600, path=pipe)
    except asyncio.CancelledError:
        print("stopped", flush=True)
    finally:
        signals.uninstall()

asyncio.run(main(sys.argv[1]))
"""


def test_sigterm_ends_the_process_while_a_read_is_stuck(tmp_path: Path) -> None:
    pipe = fifo(tmp_path / "mount")
    process = subprocess.Popen(
        [sys.executable, "-c", STUCK_READER, str(pipe)],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "reading\n"
        time.sleep(0.2)  # into the kernel
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        assert process.stdout.read() == "stopped\n"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
