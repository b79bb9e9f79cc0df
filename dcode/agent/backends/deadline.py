"""Blocking file-system calls with a deadline, on threads that never hold up dcode's exit.

A read from a stalled network mount or a dying drive can block in the kernel for minutes, and
no thread can be interrupted there. ``asyncio.to_thread`` would leave such a call on the
default executor, whose threads Python joins at exit: the turn would hang, and so would
quitting, even on SIGTERM. Here calls run on daemon threads (kept idle for the next call, so
a read costs no thread start), the caller waits at most ``seconds`` and then fails with
``TimeoutError``; the stuck thread is abandoned (what it returns late, an open file say, is
handed to ``discard``) and dies with the process.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

T = TypeVar("T")

IO_DEADLINE_S = 30.0
"""How long one file-system call (a stat, an open, one chunk of a read) may take."""
IDLE_THREAD_S = 60.0


class _DaemonThreads:
    """Daemon threads that take calls from one queue; a thread stuck in a call is simply never
    idle again, and a new one is started when no idle thread is left."""

    def __init__(self, idle_seconds: float = IDLE_THREAD_S) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._idle_seconds = idle_seconds

    def submit(self, call: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # that thread is spoken for
        self._calls.put(call)
        if start:
            threading.Thread(target=self._serve, name="dcode-file-io", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                call = self._calls.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody has counted on this thread: it may go
                        self._idle -= 1
                        return
                continue
            call()
            with self._lock:
                self._idle += 1


_THREADS = _DaemonThreads()


def stalled(path: str | Path, seconds: float) -> TimeoutError:
    """The error for a call that did not return in time; ``explain`` shows it as one line."""
    return TimeoutError(
        errno.ETIMEDOUT,
        f"the file system did not answer within {seconds:g} s (a stalled network or removable drive?)",
        str(path),
    )


async def call_with_deadline(
    fn: Callable[..., T],
    *args: object,
    seconds: float,
    path: str | Path,
    discard: Callable[[T], object] | None = None,
) -> T:
    """``fn(*args)`` on a daemon thread; ``TimeoutError`` (naming ``path``) after ``seconds``.

    Cancelling the caller abandons the call the same way. ``discard`` receives a result that
    arrives after nobody waits for it any more (to close a file the late call opened).
    """
    return await _on_daemon_thread(fn, args, seconds, path, discard)


async def detached(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` on a daemon thread, with no deadline: for blocking work that bounds its
    own time (a job in a worker process) but must not hold up exit while it runs."""
    return await _on_daemon_thread(fn, args, None, "", None)


async def _on_daemon_thread(
    fn: Callable[..., T],
    args: tuple[object, ...],
    seconds: float | None,
    path: str | Path,
    discard: Callable[[T], object] | None,
) -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()  # as asyncio.to_thread does: the caller's context vars

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            if error is None and result is not None and discard is not None:
                discard(result)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(cast("T", result))  # the call's own value when it raised nothing

    def work() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
            error = exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: nobody will ever take the result
            if error is None and result is not None and discard is not None:
                discard(result)

    _THREADS.submit(work)
    try:
        done, _ = await asyncio.wait({future}, timeout=seconds)
    finally:
        if not future.done():
            future.cancel()  # timed out, or the caller was cancelled: the call is abandoned
    if not done:
        assert seconds is not None
        raise stalled(path, seconds)
    return future.result()
