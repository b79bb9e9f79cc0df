"""Replacing a file's content so that it is always whole: the old bytes or the new, never a part.

The new content goes to a temporary file beside the target (the same directory, so the same file
system), is flushed to disk, and is then renamed over the target. A rename is atomic, so a kill,
a crash or a full disk in the middle of a write leaves the old file exactly as it was, and a
failed write removes its temporary file. The temporary file takes the target's mode (and owner,
where allowed) before any byte is written, so an executable script stays executable.

The target must already be resolved (``paths.resolve_path``): no symlink is left in it, so
writing "through" a link replaces the file it points to and the link itself stays.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from dcode.regular_files import require_regular

TEMP_SUFFIX = ".dcode-tmp"
CHUNK_BYTES = 1 << 20
_NAME_ROOM = 200  # of the target's name kept in the temporary name, under NAME_MAX (255)
_TRIES = 8


def write_atomic(target: Path, data: bytes) -> None:
    """Replace ``target``'s content with ``data``; errors name the target, not the temporary."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = _existing(target)
    fd, temp = _create_temp(target)
    try:
        try:
            if old is not None:
                _take_metadata(fd, old)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except OSError as exc:
        _discard(temp)
        raise OSError(exc.errno, exc.strerror, str(target)) from exc
    except BaseException:
        _discard(temp)
        raise
    _sync_directory(target.parent)


def _discard(temp: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(temp)


def _existing(target: Path) -> os.stat_result | None:
    """The target's metadata; the same refusals as opening it for writing would give, and a
    pipe or device is refused (renaming over ``/dev/null`` would replace the device)."""
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return None
    require_regular(info, target)
    if not os.access(target, os.W_OK):
        # A rename would replace a read-only file the user never meant to be writable.
        raise PermissionError(errno.EACCES, "Permission denied", str(target))
    return info


# What open() gives a new file, less the umask: a new workspace file gets the mode any editor
# would give it (the workspace is the user's, not dcode's private home).
NEW_FILE_MODE = (
    stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH
)


def _create_temp(target: Path) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for _ in range(_TRIES):
        temp = target.parent / f".{target.name[:_NAME_ROOM]}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            return os.open(temp, flags, NEW_FILE_MODE), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not pick a temporary file name", str(target))


def _take_metadata(fd: int, old: os.stat_result) -> None:
    if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after chown, which clears set-id bits


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.write(fd, view[offset : offset + CHUNK_BYTES])


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable; a file system that cannot sync a directory is fine."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
