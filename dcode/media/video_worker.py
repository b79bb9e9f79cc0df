"""The video decoder process: ``python -P -m dcode.media.video_worker``.

Decoding runs here, not in dcode, for two reasons:
- **the deadline must be real.** libavcodec gives no way to interrupt a decode in progress, and
  a thread cannot be killed; a process can. dcode kills this one when a job overruns its
  wall-clock budget, whatever the decoder is doing (a hostile file, a stalled read).
- **a crash stays here.** A video in a repository is input from anyone; if a damaged stream
  brings down FFmpeg, the read fails with a clear error instead of taking the session with it.

The process serves jobs one after another (dcode keeps an idle one for the next read, since
starting Python and loading PyAV costs ~0.1 s) and exits when its stdin closes or after
:data:`IDLE_SECONDS` without work. ``-P`` keeps the current directory (a repository that
might hold an ``av.py``) off ``sys.path``. The protocol is in ``video_protocol``.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import BinaryIO

from dcode.media.video_protocol import write_message

IDLE_SECONDS = 120.0
STALL_ENV = "DCODE_VIDEO_TEST_STALL"
"""For tests of the deadline: once this many frames are sent (0: before the stream's facts),
the process hangs the way a decoder stuck inside libavcodec would, answering nothing."""


class _Requests:
    """Lines from dcode on stdin, read without blocking the job in progress."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.closed = False

    def next(self, timeout: float | None) -> dict[str, object] | None:
        """The next request; None on end of input or when ``timeout`` passes with nothing."""
        while b"\n" not in self.buffer:
            if self.closed or not self._fill(timeout):
                return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            request = json.loads(line)
        except ValueError:
            return {"op": "invalid"}
        return request if isinstance(request, dict) else {"op": "invalid"}

    def poll_stop(self) -> bool:
        """Whether a ``stop`` arrived (a closed stdin counts: nobody is listening any more)."""
        while self._fill(0):
            pass
        if self.closed:
            return True
        return any(_op(line) == "stop" for line in self.buffer.split(b"\n")[:-1])

    def _fill(self, timeout: float | None) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.fd, 65536)
        if not chunk:
            self.closed = True
            return False
        self.buffer += chunk
        return True


def _stall_after() -> int | None:
    value = os.environ.get(STALL_ENV, "")
    return int(value) if value.isdigit() else None


def _op(line: bytes) -> str | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value.get("op") if isinstance(value, dict) else None


class _PipeSink:
    def __init__(self, out: BinaryIO, requests: _Requests) -> None:
        self.out = out
        self.requests = requests
        self.sent = 0
        self.stall_after = _stall_after()

    def facts(self, facts: dict[str, object]) -> None:
        self._maybe_stall()
        write_message(self.out, {"kind": "facts", **facts})

    def frame(self, target: float, t: float, width: int, height: int, jpeg: bytes) -> None:
        write_message(
            self.out,
            {"kind": "frame", "target": target, "t": t, "width": width, "height": height},
            jpeg,
        )
        self.sent += 1
        self._maybe_stall()

    def _maybe_stall(self) -> None:
        if self.stall_after is not None and self.sent >= self.stall_after:
            while True:
                time.sleep(3600)

    def stop_requested(self) -> bool:
        return self.requests.poll_stop()


def _serve(out: BinaryIO) -> None:
    from dcode.media.video_sampling import Job, SampleError, sample

    requests = _Requests(sys.stdin.fileno())
    while (request := requests.next(IDLE_SECONDS)) is not None:
        if request.get("op") != "sample":
            continue  # a stop that arrived after its job ended
        try:
            outcome = sample(Job.from_request(request), _PipeSink(out, requests))
        except SampleError as exc:
            write_message(out, {"kind": "error", "message": str(exc)})
            continue
        except (KeyError, TypeError, ValueError) as exc:
            write_message(out, {"kind": "error", "message": f"bad request: {exc}"})
            continue
        except MemoryError:
            write_message(out, {"kind": "error", "message": "decoding ran out of memory"})
            continue
        write_message(
            out,
            {
                "kind": "end",
                "reason": outcome.reason,
                "next_target": outcome.next_target,
                "last_t": outcome.last_t,
                "damage": outcome.damage,
            },
        )
        # A stop that crossed the job's natural end is stale now; drop it.
        requests.buffer = b"\n".join(
            line for line in requests.buffer.split(b"\n") if _op(line) != "stop"
        )


def main() -> int:
    # The protocol owns the original stdout; anything a library prints lands on stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        import av  # noqa: F401 - fail here, with the reason, rather than per job
    except ImportError as exc:
        write_message(out, {"kind": "error", "message": f"PyAV cannot be loaded: {exc}"})
        return 1
    try:
        _serve(out)
    except (BrokenPipeError, KeyboardInterrupt):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
