"""Opening a file someone named (the model, a prompt, a paste) only when it is a regular file.

A named pipe with no writer makes ``open`` wait for ever, a device (``/dev/zero``,
``/dev/urandom``) never ends, and a terminal or socket is no file to read at all; a thread
stuck in such a call cannot be cancelled and keeps the process from exiting. So the path is
refused by its ``stat`` before anything opens it, and then opened with ``O_NONBLOCK`` (a pipe
or device never blocks the open) and checked again on the descriptor itself with ``fstat``:
whatever the path led to at the moment of opening, that object is the one checked, so a file
swapped for a pipe in between is refused too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NotRegularFile(OSError):
    """The path leads to a pipe, a device or a socket; ``what`` says which ("a named pipe")."""

    def __init__(self, what: str, path: str | Path) -> None:
        super().__init__(errno.EINVAL, f"is {what}, not a regular file", str(path))
        self.what = what


def describe_mode(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words for a user."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a special file"


def require_regular(info: os.stat_result, path: str | Path) -> None:
    """Raise ``IsADirectoryError`` or ``NotRegularFile`` unless ``info`` is a regular file's."""
    if stat.S_ISREG(info.st_mode):
        return
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    raise NotRegularFile(describe_mode(info.st_mode), path)


def open_regular(path: str | Path, *, buffered: bool = True) -> BinaryIO:
    """``path`` opened for binary reading, if (and only if) it is a regular file; never blocks
    on a pipe or device. Symlinks are followed, and what they lead to is what gets checked.

    ``buffered=False`` gives the raw file, whose ``close`` does not wait for a read still
    running on another thread (a buffered one takes the read's lock first)."""
    require_regular(os.stat(path), path)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        require_regular(os.fstat(fd), path)
        # Reads of a regular file never see EAGAIN, but a plain blocking descriptor is what
        # every later reader (Pillow, zlib, a subprocess inheriting it) expects.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb", buffering=-1 if buffered else 0)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` of them when given)."""
    with open_regular(path) as handle:
        return handle.read() if limit is None else handle.read(limit)


# Config and settings files are a few KiB. One of gigabytes is hostile or a mistake, and the
# JSON and TOML parsers hold two or three copies of it: a 0.5 GB .mcp.json took 1.1 GB.
CONFIG_BYTES = 1024 * 1024


class TooLarge(OSError):
    """The file is larger than its reader takes; nothing past the limit was read."""

    def __init__(self, path: str | Path, limit: int) -> None:
        mib, kib = divmod(limit, 1024 * 1024)
        size = f"{mib:,} MiB" if not kib else f"{limit // 1024:,} KiB"
        super().__init__(errno.EFBIG, f"larger than {size}", str(path))


def read_config(path: str | Path, limit: int = CONFIG_BYTES) -> bytes:
    """The bytes of the regular file ``path``; raises ``TooLarge`` past ``limit`` bytes."""
    data = read_regular(path, limit + 1)
    if len(data) > limit:
        raise TooLarge(path, limit)
    return data
