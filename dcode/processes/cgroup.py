"""A cgroup v2 of dcode's own, where the machine lets dcode make one.

dcode makes ``dcode-PID-START`` below the cgroup it was started in and moves itself there, so
every process it starts, and every process those start, is born inside it: a process can leave
the process group or the session (``setsid``), and be orphaned, but not leave the cgroup. The
members are then known exactly, without following parent links, and after a ``kill -9`` the
next dcode ends the whole cgroup at once (``cgroup.kill``) and removes it.

This needs a writable cgroup v2 (a delegated subtree, or root with ``/sys/fs/cgroup`` writable);
elsewhere (a desktop session's scope, a container with a read-only ``/sys/fs/cgroup``) nothing is
made and the subreaper and the recorded trees do the work. ``DCODE_CGROUP=off`` turns it off.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from dcode.processes import table

OFF_VARIABLE = "DCODE_CGROUP"
_NAME = re.compile(r"^dcode-(\d+)-(\d+)$")
_EMPTY_WAIT_S = 2.0


def _mounted_at() -> tuple[Path, str] | None:
    """Where the cgroup v2 hierarchy is mounted, and which of its paths that mount shows."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        before, _, after = line.partition(" - ")
        fields = before.split()
        if after.split()[:1] == ["cgroup2"] and len(fields) >= 5:
            return Path(fields[4]), fields[3]
    return None


def current() -> Path | None:
    """The directory of the cgroup v2 this process is in, or None without cgroup v2."""
    mount = _mounted_at()
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    path = next((line[3:] for line in lines if line.startswith("0::")), None)
    if mount is None or path is None or path.endswith(" (deleted)"):
        return None
    mount_point, mount_root = mount
    relative = os.path.relpath(path, mount_root)
    if relative.startswith(".."):
        return None  # this process's cgroup is outside what is mounted here
    return (mount_point / relative).resolve()


def usable_parent() -> Path | None:
    """Our cgroup, if we may make a cgroup below it and move ourselves there."""
    here = current()
    if (
        here is None
        or not os.access(here, os.W_OK)
        or not os.access(here / "cgroup.procs", os.W_OK)
    ):
        return None
    return here


def name_for(pid: int, start: int) -> str:
    return f"dcode-{pid}-{start}"


def owner_of(path: Path) -> tuple[int, int] | None:
    """The (pid, start) of the dcode a cgroup was made for, from its name."""
    match = _NAME.match(path.name)
    return (int(match[1]), int(match[2])) if match else None


@dataclass(frozen=True, slots=True)
class Cgroup:
    path: Path
    origin: Path
    """Where dcode was before: it goes back there to remove its own cgroup on the way out."""

    @classmethod
    def enter(cls, pid: int, start: int) -> Cgroup | None:
        """Make dcode's cgroup and move this process into it; None where that is not allowed."""
        if os.environ.get(OFF_VARIABLE, "").lower() in {"off", "0", "no", "false"}:
            return None
        origin = usable_parent()
        if origin is None:
            return None
        path = origin / name_for(pid, start)
        try:
            path.mkdir()
        except OSError:
            return None
        try:
            (path / "cgroup.procs").write_text("0")
        except OSError:
            _remove(path)
            return None
        return cls(path, origin)

    def members(self) -> list[int]:
        return members(self.path)

    def leave(self) -> None:
        """Move this process back where it came from and remove the (now empty) cgroup, with
        the cgroups of dcodes it ran that were killed (their processes were ended with ours)."""
        with contextlib.suppress(OSError):
            (self.origin / "cgroup.procs").write_text("0")
        for directory, _, _ in sorted(os.walk(self.path), key=lambda entry: -len(entry[0])):
            _remove(Path(directory))


def members(path: Path) -> list[int]:
    try:
        return [int(line) for line in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def end_stale(path: Path) -> int:
    """Kill everything in the cgroup of a dcode that is gone, then remove it; how many there were."""
    found = [pid for pid in members(path) if pid != os.getpid()]
    try:
        (path / "cgroup.kill").write_text("1")
    except OSError:  # kernels before 5.14: one by one
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _EMPTY_WAIT_S
    while members(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    _remove(path)
    return len(found)


def stale_siblings(parent: Path) -> list[Path]:
    """Cgroups of dcodes that are gone, beside ours (made by a dcode that was killed)."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    return [
        entry
        for entry in entries
        if (owner := owner_of(entry)) is not None and table.matches(*owner) is None
    ]


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()
