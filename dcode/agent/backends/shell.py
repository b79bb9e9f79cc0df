"""Running one shell command for the model, safely for the app around it.

* stdin is ``/dev/null``: a command that waits for input gets EOF instead of hanging the turn.
* The command gets its own session (``setsid``): no controlling terminal, so nothing can open
  ``/dev/tty`` and scribble over the full-screen UI or prompt for a password there; and its own
  process group and session, registered with ``dcode.processes.trees.TREES``: a timeout or a
  cancelled turn ends the command's whole tree, what left its session with ``setsid`` included.
* Because of that, the terminal's signals never reach the command, so dcode ends the trees
  itself when it gets SIGTERM, SIGINT or SIGHUP (see ``dcode.processes.exit_signals``) and when it exits.
  A background job (``server &``) outlives its command, by design, but not dcode.
* stdout and stderr share one pipe, so the model sees them interleaved as a person would.
* This uses a ``SubprocessProtocol`` rather than ``create_subprocess_exec``'s streams: with
  streams, waiting for exit also waits for the pipe to close, which a backgrounded grandchild
  (``server &``) holds open indefinitely. The protocol reports exit and end-of-output separately.
* Output is also handed, as it arrives, to an optional sink (``OutputSink``), so a screen can
  show a long command's last lines while it runs.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from dcode.agent.backends.capture import HeadTailBuffer
from dcode.agent.backends.protocol import ExecResult, OutputSink
from dcode.processes import table
from dcode.processes.ending import TERM_GRACE_S
from dcode.processes.trees import TREES

# What a command's output keeps (its head and tail halves). Well above the eviction threshold
# (``middleware.result_eviction``): an output over 80,000 chars reaches the model as a preview,
# and the file it is saved to holds it whole up to this cap.
MAX_OUTPUT_CHARS = 2_000_000
# After the shell exits, how long output may keep arriving from what it left behind.
DRAIN_GRACE_S = 1.0

log = logging.getLogger(__name__)

DETACHED_NOTE = (
    "[note: the command exited but a background process still holds its output open; "
    "output after this point is not captured - redirect background output to a file]"
)


class _ShellProtocol(asyncio.SubprocessProtocol):
    def __init__(self, buffer: HeadTailBuffer, sink: OutputSink | None = None) -> None:
        self._buffer = buffer
        self._sink = sink
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        self._take(self._decoder.decode(bytes(data)))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._take(self._decoder.decode(b"", final=True))
        self.output_closed.set()

    def _take(self, text: str) -> None:
        self._buffer.add(text)
        if self._sink is None or not text:
            return
        try:
            self._sink(text)
        except Exception:  # showing the output must never end the command
            log.debug("the output sink failed; the output is no longer shown live", exc_info=True)
            self._sink = None

    def process_exited(self) -> None:
        self.exited.set()


async def run_shell(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    max_chars: int = MAX_OUTPUT_CHARS,
    env: Mapping[str, str] | None = None,
    on_output: OutputSink | None = None,
) -> ExecResult:
    loop = asyncio.get_running_loop()
    buffer = HeadTailBuffer(max_chars)
    since = table.ticks_now()
    transport, protocol = await loop.subprocess_exec(
        lambda: _ShellProtocol(buffer, on_output),
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    pid = transport.get_pid()
    TREES.add(pid, since)
    timed_out = False
    detached = False
    try:
        if not await _wait(protocol.exited, timeout):
            timed_out = True
            await asyncio.to_thread(TREES.end_session, pid)
            await _wait(protocol.exited, TERM_GRACE_S)
        detached = not await _wait(protocol.output_closed, DRAIN_GRACE_S)
    finally:
        if not protocol.exited.is_set():  # cancelled: take the whole tree down with us
            TREES.kill_session_now(pid)
        transport.close()
        TREES.refresh_soon()
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


def _exit_code(returncode: int | None) -> int:
    match returncode:
        case None:
            return -1
        case code if code < 0:
            return 128 - code
        case code:
            return code
