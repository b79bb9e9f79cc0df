"""What ``/proc`` says of processes: parent, process group, session and start time.

A pid alone names a process only while it lives: the kernel hands it out again later. The start
time (field 22 of ``/proc/PID/stat``, in clock ticks since boot) tells one holder of a pid from
the next, so everything dcode remembers about a process is the pair (pid, start).

On a system without ``/proc`` every query answers "nothing": tracking then rests on process
groups alone, as it did before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PROC = "/proc"
ZOMBIE = "Z"


@dataclass(frozen=True, slots=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int
    state: str

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.start)

    @property
    def zombie(self) -> bool:
        return self.state == ZOMBIE


def parse_stat(pid: int, data: bytes) -> Proc | None:
    """``/proc/PID/stat``; the command name (field 2) may hold spaces and parentheses, so the
    fields are counted from its last ``)``."""
    fields = data.rpartition(b")")[2].split()
    if len(fields) < 20:
        return None
    try:
        return Proc(
            pid,
            int(fields[1]),
            int(fields[2]),
            int(fields[3]),
            int(fields[19]),
            fields[0].decode("ascii", "replace"),
        )
    except ValueError:
        return None


def available() -> bool:
    """Whether processes can be seen here at all (``/proc`` of Linux)."""
    return os.path.exists(f"{PROC}/self/stat")


def read(pid: int) -> Proc | None:
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            return parse_stat(pid, handle.read())
    except (OSError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    proc = read(pid)
    return proc.start if proc is not None else None


def matches(pid: int, start: int) -> Proc | None:
    """The process ``pid`` if it is still the one that started at ``start`` and not a zombie."""
    proc = read(pid)
    return proc if proc is not None and proc.start == start and not proc.zombie else None


def snapshot() -> dict[int, Proc]:
    """Every process this one can see."""
    try:
        names = os.listdir(PROC)
    except OSError:
        return {}
    table: dict[int, Proc] = {}
    for name in names:
        if name.isdigit() and (proc := read(int(name))) is not None:
            table[proc.pid] = proc
    return table


def descendants(table: Mapping[int, Proc], roots: Iterable[int]) -> set[int]:
    """The pids below ``roots`` (not the roots themselves), following parent links."""
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: set[int] = set()
    pending = list(roots)
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def ticks_now() -> int:
    """Now, in the unit and from the origin of start times (clock ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))
