"""Running one shell command for the model, safely for the app around it.

* stdin is ``/dev/null``: a command that waits for input gets EOF instead of hanging the turn.
* The command gets its own session (``setsid``): no controlling terminal, so nothing can open
  ``/dev/tty`` and scribble over the full-screen UI or prompt for a password there; and its own
  process group, so a timeout or a cancelled turn kills everything it started, not just the shell.
* Because of that, the terminal's signals never reach the command, so dcode ends the groups
  itself: ``LIVE_GROUPS`` keeps every group that may still have members (a command's
  ``server &`` outlives the command, by design), and ``end_process_groups`` ends them all when
  dcode gets SIGTERM, SIGINT or SIGHUP (see ``dcode.exit_signals``) and when it exits normally.
* stdout and stderr share one pipe, so the model sees them interleaved as a person would.
* This uses a ``SubprocessProtocol`` rather than ``create_subprocess_exec``'s streams: with
  streams, waiting for exit also waits for the pipe to close, which a backgrounded grandchild
  (``server &``) holds open indefinitely. The protocol reports exit and end-of-output separately.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from dcode.agent.backends.capture import HeadTailBuffer
from dcode.agent.backends.protocol import ExecResult

# What a command's output keeps (its head and tail halves). Well above the eviction threshold
# (``middleware.result_eviction``): an output over 80,000 chars reaches the model as a preview,
# and the file it is saved to holds it whole up to this cap.
MAX_OUTPUT_CHARS = 2_000_000
# After the shell exits, how long output may keep arriving from what it left behind.
DRAIN_GRACE_S = 1.0
# Between SIGTERM and SIGKILL when a command times out, or when dcode ends.
TERM_GRACE_S = 0.3
_POLL_S = 0.01

DETACHED_NOTE = (
    "[note: the command exited but a background process still holds its output open; "
    "output after this point is not captured - redirect background output to a file]"
)


class ProcessGroups:
    """The process groups the shell tool started that may still have members.

    A group is forgotten once it is empty (checked with signal 0 whenever the registry is used),
    so a process id the kernel hands out again later is not mistaken for one of ours; a group
    owned by someone else (``PermissionError``) cannot be ours either.
    """

    def __init__(self) -> None:
        self._groups: set[int] = set()

    def add(self, pgid: int) -> None:
        self._prune()
        self._groups.add(pgid)

    def live(self) -> frozenset[int]:
        self._prune()
        return frozenset(self._groups)

    def end_all(self, grace: float = TERM_GRACE_S) -> None:
        """SIGTERM every live group, wait up to ``grace`` for them to go, SIGKILL what is left.

        Synchronous on purpose: it runs from signal handlers and at interpreter exit, when no
        event loop may be left to wait on.
        """
        for pgid in self.live():
            _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.live() and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        for pgid in self.live():
            _signal_group(pgid, signal.SIGKILL)
        self._groups.clear()

    def _prune(self) -> None:
        for pgid in list(self._groups):
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                self._groups.discard(pgid)


LIVE_GROUPS = ProcessGroups()


def end_process_groups() -> None:
    """End everything the shell tool started that still runs (dcode is about to exit)."""
    LIVE_GROUPS.end_all()


atexit.register(end_process_groups)


class _ShellProtocol(asyncio.SubprocessProtocol):
    def __init__(self, buffer: HeadTailBuffer) -> None:
        self._buffer = buffer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        self._buffer.add(self._decoder.decode(bytes(data)))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._buffer.add(self._decoder.decode(b"", final=True))
        self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


async def run_shell(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    max_chars: int = MAX_OUTPUT_CHARS,
    env: Mapping[str, str] | None = None,
) -> ExecResult:
    loop = asyncio.get_running_loop()
    buffer = HeadTailBuffer(max_chars)
    transport, protocol = await loop.subprocess_exec(
        lambda: _ShellProtocol(buffer),
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    pid = transport.get_pid()
    LIVE_GROUPS.add(pid)
    timed_out = False
    detached = False
    try:
        if not await _wait(protocol.exited, timeout):
            timed_out = True
            await _kill_group(pid, protocol.exited)
        detached = not await _wait(protocol.output_closed, DRAIN_GRACE_S)
    finally:
        if not protocol.exited.is_set():  # cancelled: take the whole group down with us
            _signal_group(pid, signal.SIGKILL)
        transport.close()
    output = buffer.text()
    if detached:
        output = f"{output.rstrip()}\n{DETACHED_NOTE}".lstrip("\n")
    return ExecResult(
        output=output,
        exit_code=_exit_code(transport.get_returncode()),
        timed_out=timed_out,
        truncated=buffer.truncated,
    )


async def _wait(event: asyncio.Event, timeout: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    return True


async def _kill_group(pid: int, exited: asyncio.Event) -> None:
    """SIGTERM the group so tools can clean up, then SIGKILL whatever ignored it."""
    _signal_group(pid, signal.SIGTERM)
    await _wait(exited, TERM_GRACE_S)
    _signal_group(pid, signal.SIGKILL)
    await _wait(exited, TERM_GRACE_S)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _exit_code(returncode: int | None) -> int:
    match returncode:
        case None:
            return -1
        case code if code < 0:
            return 128 - code
        case code:
            return code
