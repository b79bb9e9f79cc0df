"""Ending a set of processes: SIGTERM, a short grace, then SIGKILL for whatever ignored it.

Synchronous on purpose: it runs from signal handlers and at interpreter exit, when no event loop
may be left to wait on (async callers run it in a thread).

Parents are signalled before their children, in every round: a shell whose child died first
would go on to the next line of its script (``sleep 5; touch done``) before its own signal came.

A process is signalled only while it is still the one that was found (pid and start time).
Where the kernel has pidfds the check and the signal cannot be told apart: the pidfd is opened
first, so the pid cannot change hands between the check and the signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable

from dcode.processes import table
from dcode.processes.table import Proc

# Between SIGTERM and SIGKILL: enough for a server to flush and close, short enough to quit at once.
TERM_GRACE_S = 0.3
_POLL_S = 0.01
# A process killed in one round may have forked just before: the later rounds find those.
_KILL_ROUNDS = 4

Key = tuple[int, int]
Finder = Callable[[], Iterable[Proc]]


def send(key: Key, signum: int) -> bool:
    """Signal the process ``key`` (pid, start) if it is still that process; True if sent."""
    pid, start = key
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (OSError, AttributeError):  # an older kernel: check, then signal
        return table.matches(pid, start) is not None and _kill(pid, signum)
    try:
        if table.matches(pid, start) is None:
            return False
        signal.pidfd_send_signal(fd, signum)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        os.close(fd)


def _kill(pid: int, signum: int) -> bool:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def alive(key: Key) -> bool:
    return table.matches(*key) is not None


def end(find: Finder, grace: float = TERM_GRACE_S) -> int:
    """End what ``find`` returns (asked again before each SIGKILL round, for late arrivals).

    Returns how many processes were ended (zombies are already ended and are not counted).
    """
    found = [proc for proc in find() if not proc.zombie]
    first = {proc.key for proc in found}
    for key in parents_first(found):
        send(key, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while first and any(alive(key) for key in first) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    ended = set(first)
    for _ in range(_KILL_ROUNDS):
        now = [proc for proc in find() if not proc.zombie]
        older = [key for key in ended if alive(key)]
        if not now and not older:
            break
        ended |= {proc.key for proc in now} | set(older)
        for key in parents_first(now, older):
            send(key, signal.SIGKILL)
        time.sleep(_POLL_S)
    return len(ended)


def parents_first(procs: Iterable[Proc], also: Iterable[Key] = ()) -> list[Key]:
    """The keys of ``procs`` with every parent before its children (then ``also``'s, oldest
    first): a parent signalled after its child could run on for a moment and start the next
    command of its script. Start times alone do not tell: a child forked in the same clock tick
    as its parent has the same one."""
    by_pid = {proc.pid: proc for proc in procs}

    def depth(proc: Proc) -> int:
        steps, seen = 0, {proc.pid}
        while (parent := by_pid.get(proc.ppid)) is not None and parent.pid not in seen:
            seen.add(parent.pid)
            proc, steps = parent, steps + 1
        return steps

    ordered = [p.key for p in sorted(by_pid.values(), key=lambda p: (depth(p), p.start, p.pid))]
    listed = set(ordered)
    return ordered + sorted((key for key in also if key not in listed), key=lambda k: (k[1], k[0]))


def end_groups(groups: Iterable[int], grace: float = TERM_GRACE_S) -> None:
    """``end`` for systems without ``/proc``: whole process groups, by their ids."""
    groups = set(groups)
    for pgid in groups:
        _kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_kill_group(pgid, 0) for pgid in groups) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    for pgid in groups:
        _kill_group(pgid, signal.SIGKILL)


def _kill_group(pgid: int, signum: int) -> bool:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_now(find: Finder) -> None:
    """SIGKILL what ``find`` returns, with no grace (a cancelled command: nothing may wait)."""
    for key in parents_first(proc for proc in find() if not proc.zombie):
        with contextlib.suppress(OSError):
            send(key, signal.SIGKILL)
