"""One process holds a session at a time: the SQLite store's file lock (``SqliteStore.hold``).

Two processes continuing one thread each load its latest checkpoint and each write their turn
after it. LangGraph keeps both checkpoints, but the thread goes on from whichever was written
last, so the other turn silently drops out of the history. So a process takes the session
before it runs anything in it, and a second one is told who has it.

The hold is an ``flock`` on ``$DCODE_HOME/locks/SESSION.lock``, not a lease row in the database:

- The kernel drops the lock when its process ends, however it ends (``kill -9``, a crash, an
  OOM kill). Nothing can stay held by a dead process, with no liveness check to get wrong:
  pids are reused, and a lease would need an expiry that is either too short for a long
  turn or too long for a crash.
- Taking it costs no write transaction on a database other processes are busy writing, and it
  still works when the database file itself cannot be opened.

The holder writes its pid into the file, only so that a refused process can say who has it.
The file is removed on release; a process that locked a file just removed (it opened it a
moment before) sees that the path no longer names what it locked, and tries again.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
from pathlib import Path
from types import TracebackType

from dcode.agent.store.base import SessionHeld
from dcode.settings.private_files import open_private_fd

LOCKS_DIR = "locks"
_PLAIN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def lock_path(home: Path, session_id: str) -> Path:
    """Where ``session_id``'s lock lives; ids that are not plain names (``SID/task/2``) are hashed."""
    name = (
        session_id
        if _PLAIN_ID.match(session_id)
        else hashlib.sha256(session_id.encode()).hexdigest()[:32]
    )
    return home / LOCKS_DIR / f"{name}.lock"


class SessionLock:
    """A held session; ``release()`` (or leaving the ``with``) lets the next process have it."""

    def __init__(self, session_id: str, path: Path, fd: int) -> None:
        self.session_id = session_id
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, home: Path, session_id: str) -> SessionLock:
        """Hold ``session_id`` for this process, or raise ``SessionHeld`` at once (never waits)."""
        path = lock_path(home, session_id)
        while True:
            fd = open_private_fd(path, os.O_RDWR | os.O_CLOEXEC)  # 0600, in a 0700 directory
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                pid = _read_pid(fd)
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise SessionHeld(session_id, pid) from None
                raise
            if _names(path, fd):
                break
            os.close(fd)  # its holder removed it while we opened it: lock the new file
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(session_id, path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def confirm(self) -> None:
        """A lock on an open file lasts as long as the file stays open: nothing to check."""

    def release(self) -> None:
        """Let the session go; releasing twice is harmless."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # still ours: nobody else can lock this path now
        finally:
            os.close(fd)  # closing drops the lock

    def __enter__(self) -> SessionLock:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still is the file open as ``fd``."""
    try:
        on_disk = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
