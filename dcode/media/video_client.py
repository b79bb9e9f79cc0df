"""dcode's side of the video decoder process: start it, feed it a job, hold it to a deadline.

One process runs one job at a time. After a job that ended normally the process is kept
(:data:`MAX_IDLE` at most) for the next read, which then starts decoding at once instead of
paying Python's start-up and PyAV's import (~0.1 s). A process that overran the deadline,
broke the protocol or was left mid-job is killed, never reused. Idle processes exit by
themselves (their stdin closes with dcode, or they time out), so nothing outlives dcode.

Waiting is done with ``poll`` on the pipe against a monotonic deadline, so the caller gets
control back at the deadline even if the decoder never writes again.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path

from dcode.media.video_protocol import Message, MessageBuffer, ProtocolError, request_line

MAX_IDLE = 2
KILL_WAIT_SECONDS = 2.0
VIDEO_WORKER = "dcode.media.video_worker"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class DeadlineExceeded(Exception):
    """The job did not finish in time; the decoder process has been killed."""


class WorkerGone(Exception):
    """The decoder process ended or sent garbage; ``detail`` says how, ``signal`` which signal
    ended it, if one did."""

    def __init__(self, detail: str, signal: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.signal = signal


class Worker:
    """One worker process (``python -P -m module``: the video decoder unless told otherwise)
    and the bytes it has sent but we have not read yet; ``noun`` names it in errors."""

    def __init__(self, module: str = VIDEO_WORKER, noun: str = "the decoder") -> None:
        self.noun = noun
        env = dict(os.environ)
        # A source checkout run without installing must still find the package.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
        )
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=env,
            start_new_session=True,  # the terminal's Ctrl+C is dcode's to handle, not the decoder's
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.stdin = self.process.stdin
        self.stdout_fd = self.process.stdout.fileno()
        self.buffer = MessageBuffer()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, request: dict[str, object]) -> None:
        try:
            self.stdin.write(request_line(request))
            self.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise self._gone() from exc

    def receive(self, deadline: float) -> Message:
        """The next message; raises :class:`DeadlineExceeded` or :class:`WorkerGone`."""
        while True:
            try:
                message = self.buffer.pop()
            except ProtocolError as exc:
                raise WorkerGone(f"{self.noun} sent garbage ({exc})") from exc
            if message is not None:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded
            poller = select.poll()
            poller.register(self.stdout_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            if not poller.poll(max(1, int(remaining * 1000) + 1)):
                continue
            chunk = os.read(self.stdout_fd, 1 << 20)
            if not chunk:
                raise self._gone()
            self.buffer.feed(chunk)

    def kill(self) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self._reap()

    def close(self) -> None:
        """Let an idle process end by itself (its stdin closes), or make it."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.process.wait(timeout=KILL_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reap()

    def _reap(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=KILL_WAIT_SECONDS)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def _gone(self) -> WorkerGone:
        try:
            code = self.process.wait(timeout=KILL_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            return WorkerGone(f"{self.noun} stopped answering")
        if code < 0:
            return WorkerGone(f"{self.noun} crashed on this file (signal {-code})", -code)
        return WorkerGone(f"{self.noun} exited unexpectedly (status {code})")


class WorkerPool:
    """Idle worker processes of one kind, shared by every thread of the process."""

    def __init__(
        self, max_idle: int = MAX_IDLE, *, module: str = VIDEO_WORKER, noun: str = "the decoder"
    ) -> None:
        self.max_idle = max_idle
        self.module = module
        self.noun = noun
        self._idle: list[Worker] = []
        self._lock = threading.Lock()

    def acquire(self) -> Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        return self.spawn()

    def spawn(self) -> Worker:
        return Worker(self.module, self.noun)

    def release(self, worker: Worker) -> None:
        """Keep a worker whose last job ended cleanly; close it when enough are idle."""
        with self._lock:
            if worker.alive() and len(self._idle) < self.max_idle:
                self._idle.append(worker)
                return
        worker.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


POOL = WorkerPool()
atexit.register(POOL.close)


def run_job(
    request: dict[str, object], deadline: float | Callable[[], float], pool: WorkerPool = POOL
) -> Generator[Message, None, None]:
    """Send ``request`` to a decoder and yield its replies up to ``end`` or ``error``.

    ``deadline`` is a ``time.monotonic()`` instant, or a function giving it, asked before each
    reply is awaited (so a caller can grant more time as the job makes progress).

    Closing the generator early (the caller has what it needs) stops the job: the decoder is
    told to stop and its remaining replies are drained, so it can serve the next job. Any
    failure (deadline, crash, garbage, an exception in the caller) kills it instead.
    """
    until = deadline if callable(deadline) else lambda: deadline
    worker, retried = pool.acquire(), False
    clean = False
    try:
        while True:
            try:
                worker.send(request)
                first = worker.receive(until())
                break
            except WorkerGone:
                # An idle process may have timed out just as we picked it: one fresh try.
                worker.kill()
                if retried:
                    raise
                worker, retried = pool.spawn(), True
        message = first
        while True:
            # The job is over once its last reply is read: closing the generator after that
            # (the caller raising on an ``error``) has nothing left to stop.
            clean = message.kind in ("end", "error")
            yield message
            if clean:
                return
            message = worker.receive(until())
    except GeneratorExit:
        if not clean:
            clean = _stop(worker, until())
        raise
    finally:
        if clean:
            pool.release(worker)
        else:
            worker.kill()


def _stop(worker: Worker, deadline: float) -> bool:
    """Ask the running job to end and read up to its ``end``; False if that did not happen."""
    try:
        worker.send({"op": "stop"})
        while worker.receive(deadline).kind not in ("end", "error"):
            pass
    except (DeadlineExceeded, WorkerGone):
        return False
    return True
