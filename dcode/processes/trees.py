"""Every process tree dcode starts, found and ended: none outlives dcode.

What dcode starts in a session of its own (a shell command, an MCP server) is registered here by
its leader's pid. A process can leave its process group and session (``setsid``) or be orphaned
(its parent exits first), so the sessions alone are not enough. ``install``, done once by the
``dcode`` command before anything is started, adds three things:

* dcode becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``, Linux): an orphan anywhere
  below it is re-parented to dcode instead of init, so following parent links from dcode finds
  everything it started, however it detached;
* a cgroup of its own where the machine allows one (``cgroup``): membership then needs no links;
* a record under ``$DCODE_HOME`` (``records``), for the next dcode after a ``kill -9``; and the
  records of dead dcodes are dealt with, in one notice line.

When things end:

* a command's timeout or cancelled turn ends that command's tree (its session, and whatever
  below it left the session);
* a background job (``server &``) outlives its command on purpose (a dev server started in one
  command is what the next one tests) but not dcode: SIGTERM, SIGINT or SIGHUP ends every
  registered tree at once (``end_sessions``, see ``dcode.processes.exit_signals``), and at exit everything
  still under dcode is ended (``end_all``), SIGTERM first and SIGKILL after a short grace.

Being the subreaper means reaping the orphans that end while dcode runs. Only processes known
to have been adopted are waited for, each by its pid (never ``waitpid(-1)``): a zombie child of
dcode in one of its sessions but not leading it, or one seen earlier below another parent.
dcode's own children are waited for by whoever started them (asyncio's child watcher,
``subprocess``), and their exit statuses are theirs to read.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from dcode.processes import cgroup, ending, records, table
from dcode.processes.cgroup import Cgroup
from dcode.processes.ending import TERM_GRACE_S
from dcode.processes.table import Proc

PR_SET_CHILD_SUBREAPER = 36
# How often the record is brought up to date (and adopted orphans reaped) between commands,
# and how close together two updates may come (a burst of commands costs one scan a second).
REFRESH_EVERY_S = 30.0
REFRESH_GAP_S = 1.0


@dataclass(frozen=True, slots=True)
class Installed:
    home: Path
    owner: tuple[int, int]
    cgroup: Cgroup | None


class ProcessTrees:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._sessions: dict[int, int] = {}
        """Leader pid -> its start time: the sessions dcode started that may have members."""
        self._seen_below: set[tuple[int, int]] = set()
        self._wake = threading.Event()
        self.installed: Installed | None = None

    # -- setting up ------------------------------------------------------------------------

    def install(self, home: Path) -> str | None:
        """Track this process's trees (once, before anything is started); returns the notice
        about what dead dcodes left running, if anything."""
        me = os.getpid()
        start = table.start_time(me)
        if self.installed is not None or start is None:
            return None
        _become_subreaper()
        left = records.LeftBehind()
        records.end_left_behind(home, left)
        group = Cgroup.enter(me, start)
        if group is not None:
            for stale in cgroup.stale_siblings(group.origin):
                owner = cgroup.owner_of(stale)
                left.add(owner[0] if owner else 0, cgroup.end_stale(stale))
        with self._lock:
            self.installed = Installed(home, (me, start), group)
        threading.Thread(target=self._refresher, name="dcode-process-trees", daemon=True).start()
        self.refresh_soon()
        return left.notice()

    # -- the registry ----------------------------------------------------------------------

    def add(self, leader: int, since: int = 0) -> None:
        """Register the session ``leader`` started (its pid is its session and group id).

        ``since`` is a time before it was started, used when it has already gone."""
        start = table.start_time(leader)
        with self._lock:
            self._prune()
            self._sessions[leader] = start if start is not None else since
        self.refresh_soon()

    def live(self) -> frozenset[int]:
        """The registered sessions whose process group still has members."""
        with self._lock:
            self._prune()
            return frozenset(self._sessions)

    def _prune(self) -> None:
        for leader in list(self._sessions):
            try:
                os.killpg(leader, 0)
            except (ProcessLookupError, PermissionError):
                del self._sessions[leader]

    # -- ending ----------------------------------------------------------------------------

    def end_session(self, leader: int, grace: float = TERM_GRACE_S) -> int:
        """End one registered tree (a command that timed out, a server that stopped)."""
        with self._lock:
            start = self._sessions.get(leader, 0)
        return self._end({leader: start}, grace)

    def kill_session_now(self, leader: int) -> None:
        with self._lock:
            start = self._sessions.get(leader, 0)
        if table.available():
            ending.kill_now(lambda: self._trees(table.snapshot(), {leader: start}))
        else:
            ending.end_groups([leader], grace=0)

    def end_sessions(self, grace: float = TERM_GRACE_S) -> None:
        """End every registered tree (dcode got an exit signal; the rest ends at exit)."""
        with self._lock:
            sessions = dict(self._sessions)
        self._end(sessions, grace)

    def end_all(self, grace: float = TERM_GRACE_S) -> None:
        """End everything dcode started that still runs (dcode is about to exit)."""
        with self._lock:
            installed, self.installed = self.installed, None
            sessions = dict(self._sessions)
        if installed is None:
            self._end(sessions, grace)
        else:
            ending.end(lambda: self._everything(installed, sessions), grace)
            if installed.cgroup is not None:
                installed.cgroup.leave()
            records.remove(installed.home, installed.owner[0])
        with self._lock:
            self._sessions.clear()

    def _end(self, sessions: dict[int, int], grace: float) -> int:
        if not sessions:
            return 0
        if not table.available():  # no /proc: the process groups, as far as they go
            ending.end_groups(sessions, grace)
            return 0
        return ending.end(lambda: self._trees(table.snapshot(), sessions), grace)

    def _trees(self, procs: dict[int, Proc], sessions: dict[int, int]) -> list[Proc]:
        """The members of ``sessions`` (by session or group id, none older than its leader)
        and everything below them."""
        found = {p.pid for p in procs.values() if _member(p, sessions)}
        found |= table.descendants(procs, found)
        found.discard(os.getpid())
        return [procs[pid] for pid in found]

    def _everything(self, installed: Installed, sessions: dict[int, int]) -> list[Proc]:
        procs = table.snapshot()
        me = os.getpid()
        found = table.descendants(procs, [me])
        if installed.cgroup is not None:
            found.update(pid for pid in installed.cgroup.members() if pid in procs)
        found.update(p.pid for p in self._trees(procs, sessions))
        found.discard(me)
        return [procs[pid] for pid in found]

    # -- keeping the record, reaping orphans --------------------------------------------------

    def refresh_soon(self) -> None:
        """Bring the record up to date and reap adopted orphans, off the caller's thread."""
        self._wake.set()

    def refresh(self) -> None:
        procs = table.snapshot()
        with self._lock:
            if self.installed is None:
                return
            self._prune()
            self._reap(procs)
            self._write_record(procs)

    def _refresher(self) -> None:
        while True:
            self._wake.wait(REFRESH_EVERY_S)
            self._wake.clear()
            with contextlib.suppress(Exception):  # a record not written now is written next time
                self.refresh()
            time.sleep(REFRESH_GAP_S)

    def _reap(self, procs: dict[int, Proc]) -> None:
        me = os.getpid()
        below = table.descendants(procs, [me])
        for pid in below:
            proc = procs[pid]
            adopted = proc.sid in self._sessions or proc.key in self._seen_below
            if proc.ppid == me and proc.zombie and adopted and pid not in self._sessions:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        self._seen_below = {procs[pid].key for pid in below if procs[pid].ppid != me}

    def _write_record(self, procs: dict[int, Proc]) -> None:
        installed = self.installed
        if installed is None:
            return
        me = os.getpid()
        below = table.descendants(procs, [me])
        record = records.Record(
            owner=installed.owner,
            cgroup=str(installed.cgroup.path) if installed.cgroup else None,
            updated=table.ticks_now(),
            sessions=tuple(self._sessions.items()),
            processes=tuple(procs[pid].key for pid in below if not procs[pid].zombie),
        )
        records.write(installed.home, record)


def _member(proc: Proc, sessions: dict[int, int]) -> bool:
    for leader in (proc.sid, proc.pgid):
        if leader in sessions and proc.start >= sessions[leader]:
            return True
    return False


def _become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


TREES = ProcessTrees()
atexit.register(TREES.end_all)
