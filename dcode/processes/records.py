"""What a dcode has running, written down so that the next dcode can end it after a ``kill -9``.

Once dcode is killed nothing of it runs, and what it started lives on: a shell command's
background job, a server's child, whatever a command detached with ``setsid``. Each dcode keeps
``$DCODE_HOME/processes/PID.json`` (0600) up to date: itself (pid and start time), its cgroup if
it has one, the sessions it started (a shell command's, an MCP server's: leader pid and start
time) and every process found under it at the last update. A dcode that starts finds the
records whose dcode is gone and ends what still matches them:

* the cgroup, whole;
* each recorded process that still has the recorded pid and start time;
* the members of each recorded session, when its leader still runs, or when one of them was
  already running at the last update (a session id, like any pid, can be reused once the
  session is empty: a later session of the same id has no member that old);
* and everything below those.

A normal exit removes the record.
"""

# Any: json.loads hands back untyped data; from_json checks each field, and a bad one is no record

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcode.processes import cgroup, ending, table
from dcode.processes.table import Proc
from dcode.settings.private_files import write_private

DIRECTORY = "processes"

Key = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Record:
    owner: Key
    cgroup: str | None = None
    updated: int = 0
    """When it was written, in clock ticks since boot (the unit of start times)."""
    sessions: tuple[Key, ...] = ()
    processes: tuple[Key, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {
                "owner": self.owner,
                "cgroup": self.cgroup,
                "updated": self.updated,
                "sessions": self.sessions,
                "processes": self.processes,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Record:
        data: dict[str, Any] = json.loads(text)  # json: Any by nature; every field is checked below
        return cls(
            owner=_key(data["owner"]),
            cgroup=data.get("cgroup") if isinstance(data.get("cgroup"), str) else None,
            updated=int(data.get("updated", 0)),
            sessions=tuple(_key(item) for item in data.get("sessions", ())),
            processes=tuple(_key(item) for item in data.get("processes", ())),
        )


def _key(item: Any) -> Key:  # an element of parsed JSON
    pid, start = item
    return (int(pid), int(start))


def path_for(home: Path, pid: int) -> Path:
    return home / DIRECTORY / f"{pid}.json"


def write(home: Path, record: Record) -> None:
    with contextlib.suppress(OSError):
        write_private(path_for(home, record.owner[0]), record.to_json())


def remove(home: Path, pid: int) -> None:
    with contextlib.suppress(OSError):
        path_for(home, pid).unlink()


@dataclass(slots=True)
class LeftBehind:
    """What the start of dcode ended of earlier dcodes that did not exit cleanly."""

    count: int = 0
    owners: list[int] = field(default_factory=list)

    def add(self, owner: int, count: int) -> None:
        if count:
            self.count += count
            if owner not in self.owners:
                self.owners.append(owner)

    def notice(self) -> str | None:
        if not self.count:
            return None
        things = "process" if self.count == 1 else "processes"
        pids = ", ".join(str(pid) for pid in self.owners)
        whose = f"pid {pids}" if len(self.owners) == 1 else f"pids {pids}"
        return f"dcode: ended {self.count} {things} left running by a dcode that did not exit cleanly ({whose})"


def end_left_behind(home: Path, into: LeftBehind) -> None:
    """End what the records of dead dcodes name, and remove those records."""
    try:
        paths = sorted((home / DIRECTORY).glob("*.json"))
    except OSError:
        return
    for path in paths:
        record = _load(path)
        if record is not None and table.matches(*record.owner) is not None:
            continue  # its dcode still runs
        if record is not None:
            into.add(record.owner[0], _end(record))
        with contextlib.suppress(OSError):
            path.unlink()


def _load(path: Path) -> Record | None:
    try:
        return Record.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable: nothing in it can be trusted, so it only goes


def _end(record: Record) -> int:
    count = 0
    if (
        record.cgroup
        and (where := Path(record.cgroup))
        and cgroup.owner_of(where) == record.owner
        and (where / "cgroup.procs").exists()
    ):
        count += cgroup.end_stale(where)
    return count + ending.end(lambda: survivors(record, table.snapshot()))


def survivors(record: Record, procs: dict[int, Proc]) -> list[Proc]:
    """The processes of ``procs`` that ``record`` accounts for (see the module's docstring)."""
    found = {pid for pid, start in record.processes if pid in procs and procs[pid].start == start}
    for leader, start in record.sessions:
        members = [
            p for p in procs.values() if (p.sid == leader or p.pgid == leader) and p.start >= start
        ]
        leader_runs = leader in procs and procs[leader].start == start
        if leader_runs or any(p.start <= record.updated for p in members):
            found.update(p.pid for p in members)
    found |= table.descendants(procs, found)
    return [procs[pid] for pid in found - _ancestry(procs)]


def _ancestry(procs: dict[int, Proc]) -> set[int]:
    """This process and its ancestors: never a survivor, even of a record that says so."""
    line: set[int] = set()
    pid = os.getpid()
    while pid in procs and pid not in line:
        line.add(pid)
        pid = procs[pid].ppid
    return line | {os.getpid()}
