"""Creating dcode's own files under ``$DCODE_HOME`` so that only their owner can read them.

Sessions, attachments, archives, tool results and the prompt history hold the user's code,
prompts, and sometimes secrets the model saw. Every directory dcode makes there is 0700 and
every file 0600 (0400 for stored objects that nothing should edit in place).

Modes are set on each file and directory, never through the process umask: the shell tool's
commands create the user's own files in the workspace, and those keep the user's umask. Creating
with the private mode and then setting it exactly also covers a umask that would take the
owner's own bits away.

A home made by an older dcode (0755 directories, 0644 files) is tightened once by
:func:`secure_home`, which is cheap on every later start.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, TextIO

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
READ_ONLY_FILE = 0o400
GROUP_AND_OTHERS = 0o077
# Written once a home has been walked and tightened: later starts only stat the top level.
TIGHTENED_MARKER = ".private"

_FLAGS = {
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
}


def ensure_private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter; missing parents are made 0700 too,
    existing ones are left alone (the home's parent is the user's business)."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR)
        except FileExistsError:
            continue  # another process made it, the same way
        os.chmod(directory, PRIVATE_DIR)
    if not missing:
        tighten(path)
    return path


def write_private(path: Path, data: bytes | str, *, mode: int = PRIVATE_FILE) -> None:
    """Replace ``path`` atomically with ``data``: a reader sees the old bytes or the new ones.

    The bytes go to a temporary file in the same directory, which gets ``mode`` before the
    rename. Concurrent writers of the same content race harmlessly: the last rename wins.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    ensure_private_dir(path.parent)
    fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            _set_mode(handle.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def open_private_fd(path: Path, flags: int) -> int:
    """``os.open`` for a file under the home: created 0600, and an existing one made 0600."""
    ensure_private_dir(path.parent)
    fd = os.open(path, flags | os.O_CREAT, PRIVATE_FILE)
    try:
        _set_mode(fd, PRIVATE_FILE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(path: Path, mode: Literal["a", "w"] = "a", *, encoding: str = "utf-8") -> TextIO:
    """A text file opened for appending (``"a"``) or rewriting (``"w"``), private as above."""
    fd = open_private_fd(path, _FLAGS[mode])
    return os.fdopen(fd, mode, encoding=encoding)


@contextlib.contextmanager
def one_writer(lock: Path) -> Iterator[None]:
    """Hold ``lock`` (a private file, made if missing) exclusively: one read-change-replace of
    a record at a time across processes, so that two writers never lose each other's change.
    Where ``flock`` does not exist (Windows), the atomic rename alone keeps the record whole."""
    fd = open_private_fd(lock, os.O_RDWR)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:
            pass
        yield
    finally:
        os.close(fd)


def ensure_private_file(path: Path) -> Path:
    """Create ``path`` empty and 0600 if it is missing (or make an existing one 0600).

    SQLite creates a database's ``-wal`` and ``-shm`` files with the database file's own mode,
    so the database is made here, private, before SQLite opens it.

    An existing file is never opened here, only chmod-ed by path: closing any descriptor of a
    file drops every POSIX lock the process holds on it, SQLite's own included. With its shared
    lock gone, another process closing its last connection would take the database for unused,
    checkpoint it and delete the WAL under this process's open connection.
    """
    ensure_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        if stat.S_IMODE(os.stat(path).st_mode) != PRIVATE_FILE:
            os.chmod(path, PRIVATE_FILE)
        return path
    try:
        _set_mode(fd, PRIVATE_FILE)
    finally:
        os.close(fd)  # a file this call made: no connection of this process can have it open
    return path


def tighten(path: Path) -> None:
    """Take group and other bits off ``path`` (not through a symlink); errors are ignored:
    a file the user owns elsewhere, or one that just went away, is not dcode's to fix."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode) or not info.st_mode & GROUP_AND_OTHERS:
            return
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~GROUP_AND_OTHERS)
    except OSError:
        pass


def secure_home(home: Path) -> None:
    """Make an existing home private: the whole tree once, then only its top level.

    A home that is itself loose, or was never walked, is walked once (a marker records it);
    otherwise only the entries at its top are checked, which costs a few ``stat`` calls.
    """
    try:
        info = home.stat()
    except OSError:
        return  # not made yet: dcode makes it private when it first writes there
    marker = home / TIGHTENED_MARKER
    if info.st_mode & GROUP_AND_OTHERS or not marker.exists():
        tighten(home)
        for path in _walk(home):
            tighten(path)
        with contextlib.suppress(OSError):
            write_private(marker, "1\n")
        return
    try:
        entries = list(os.scandir(home))
    except OSError:
        return
    for entry in entries:
        tighten(Path(entry.path))


def _walk(top: Path) -> Iterator[Path]:
    """Every directory and file under ``top``, never through a symlink."""
    for root, dirs, files in os.walk(top, followlinks=False):
        for name in (*dirs, *files):
            yield Path(root) / name


def _set_mode(fd: int, mode: int) -> None:
    if not hasattr(os, "fchmod"):
        return  # Windows: the file keeps its directory's ACL
    if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
        os.fchmod(fd, mode)
