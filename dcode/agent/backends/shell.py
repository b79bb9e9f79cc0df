"""Running one shell command for the model, safely for the app around it.

* stdin is ``/dev/null``: a command that waits for input gets EOF instead of hanging the turn.
* The command gets its own session (``setsid``): no controlling terminal, so nothing can open
  ``/dev/tty`` and scribble over the full-screen UI or prompt for a password there; and its own
  process group, so a timeout or a cancelled turn kills everything it started, not just the shell.
* stdout and stderr share one pipe, so the model sees them interleaved as a person would.
* This uses a ``SubprocessProtocol`` rather than ``create_subprocess_exec``'s streams: with
  streams, waiting for exit also waits for the pipe to close, which a backgrounded grandchild
  (``server &``) holds open indefinitely. The protocol reports exit and end-of-output separately.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from dcode.agent.backends.capture import HeadTailBuffer
from dcode.agent.backends.protocol import ExecResult

MAX_OUTPUT_CHARS = 30_000
# After the shell exits, how long output may keep arriving from what it left behind.
DRAIN_GRACE_S = 1.0
# Between SIGTERM and SIGKILL when a command times out.
TERM_GRACE_S = 0.3

DETACHED_NOTE = (
    "[note: the command exited but a background process still holds its output open; "
    "output after this point is not captured - redirect background output to a file]"
)


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
