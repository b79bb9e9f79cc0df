"""The parts under "no process outlives dcode": reading ``/proc``, the records a killed dcode
leaves for the next one (never mistaking a reused pid for one of its processes), dcode's cgroup,
and reaping the orphans dcode adopts without taking its own children's exit statuses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcode.processes import cgroup, records, table
from dcode.processes.records import LeftBehind, Record
from tests.test_exit_signals import running, wait_for


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def stubborn(started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """A session leader that ignores SIGTERM (ready once its trap is set)."""
    proc = subprocess.Popen(
        ["sh", "-c", "trap '' TERM; echo ready; exec sleep 60"],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_a_command_name_with_spaces_and_parentheses_is_read_right() -> None:
    data = b"4242 (evil) 1 2 3 (x) S 17 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0"
    proc = table.parse_stat(4242, data)
    assert proc is not None
    assert (proc.ppid, proc.pgid, proc.sid, proc.start, proc.state) == (17, 4242, 4242, 987654, "S")


def test_a_reused_pid_is_never_taken_for_a_recorded_process(sleepers) -> None:
    proc = stubborn(sleepers)
    start = table.start_time(proc.pid)
    assert start is not None
    procs = table.snapshot()
    mine = Record(owner=(1, 1), processes=((proc.pid, start),))
    reused = Record(owner=(1, 1), processes=((proc.pid, start - 1),))
    assert [p.pid for p in records.survivors(mine, procs)] == [proc.pid]
    assert records.survivors(reused, procs) == []


def test_a_session_is_ended_only_when_it_is_the_recorded_one(sleepers) -> None:
    """A dead leader's session id may be a later session's: its members then all started after
    the record was written, and are left alone."""
    proc = stubborn(sleepers)
    start = table.start_time(proc.pid) or 0
    procs = table.snapshot()
    leader_runs = Record(owner=(1, 1), updated=0, sessions=((proc.pid, start),))
    older_member = Record(owner=(1, 1), updated=start, sessions=((proc.pid, start - 5),))
    later_session = Record(owner=(1, 1), updated=start - 1, sessions=((proc.pid, start - 5),))
    assert [p.pid for p in records.survivors(leader_runs, procs)] == [proc.pid]
    assert [p.pid for p in records.survivors(older_member, procs)] == [proc.pid]
    assert records.survivors(later_session, procs) == []


def test_the_next_start_ends_what_a_dead_dcode_recorded(tmp_path: Path, sleepers) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    survivor = stubborn(sleepers)
    start = table.start_time(survivor.pid) or 0
    alive_owner = (os.getpid(), table.start_time(os.getpid()) or 0)
    records.write(
        tmp_path,
        Record(owner=(gone.pid, 1), updated=table.ticks_now(), processes=((survivor.pid, start),)),
    )
    records.write(
        tmp_path,
        Record(owner=alive_owner, updated=table.ticks_now(), processes=((survivor.pid, start),)),
    )
    left = LeftBehind()
    records.end_left_behind(tmp_path, left)
    assert survivor.wait(timeout=5) == -signal.SIGKILL  # it ignored SIGTERM
    assert (
        left.notice()
        == f"dcode: ended 1 process left running by a dcode that did not exit cleanly (pid {gone.pid})"
    )
    assert not records.path_for(tmp_path, gone.pid).exists()
    assert records.path_for(tmp_path, os.getpid()).exists()  # a running dcode's record stays
    assert oct(records.path_for(tmp_path, os.getpid()).stat().st_mode & 0o777) == "0o600"


def test_a_damaged_record_is_dropped_and_ends_nothing(tmp_path: Path) -> None:
    path = records.path_for(tmp_path, 999999)
    path.parent.mkdir(parents=True)
    path.write_text('{"owner": [1, 2], "processes": [[1, "not a time"]]')
    left = LeftBehind()
    records.end_left_behind(tmp_path, left)
    assert not path.exists() and left.notice() is None


# A process that makes its cgroup, starts a session that ignores SIGTERM, then dies the way a
# ``kill -9`` leaves things (no clean-up): what the next dcode finds.
KILLED_WITH_A_CGROUP = """
import os, subprocess, sys
from dcode.processes import table
from dcode.processes.cgroup import Cgroup
group = Cgroup.enter(os.getpid(), table.start_time(os.getpid()))
child = subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 300"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(group.path, child.pid, flush=True)
os._exit(0)
"""


@pytest.mark.skipif(
    cgroup.usable_parent() is None,
    reason="no writable cgroup v2 here (the records and the subreaper cover this machine)",
)
def test_a_dead_dcodes_cgroup_is_ended_whole_and_removed(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", KILLED_WITH_A_CGROUP],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    path, child = Path(out[0]), int(out[1])
    try:
        assert running(child) and child in cgroup.members(path)
        assert path in cgroup.stale_siblings(path.parent)
        assert cgroup.end_stale(path) == 1
        wait_for(lambda: not running(child), 5, "the cgroup's process to end")
        assert not path.exists()
    finally:
        if running(child):
            os.kill(child, signal.SIGKILL)


REAPER = """
import os, subprocess, sys, time
from pathlib import Path
from dcode.processes import table
from dcode.processes.trees import TREES
TREES.install(Path(sys.argv[1]))
direct = subprocess.Popen(["sh", "-c", "exit 7"])
shell = subprocess.Popen(["sh", "-c", "sleep 0.2 & echo $!"], start_new_session=True, stdout=subprocess.PIPE)
TREES.add(shell.pid)
orphan = int(shell.stdout.readline())
shell.wait()
deadline = time.monotonic() + 10
while (p := table.read(orphan)) is not None and not p.zombie and time.monotonic() < deadline:
    time.sleep(0.02)
assert table.read(orphan).ppid == os.getpid(), "not adopted"
while table.read(direct.pid).state != "Z":
    time.sleep(0.02)
TREES.refresh()
print("orphan", "reaped" if table.read(orphan) is None else "left")
print("direct", direct.wait())
"""


def test_an_adopted_orphan_is_reaped_and_a_childs_own_status_is_not_taken(tmp_path: Path) -> None:
    env = {**os.environ, "DCODE_CGROUP": "off"}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(REAPER), str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["orphan reaped", "direct 7"]


LEAVING = """
import os
from dcode.processes import table
from dcode.processes.cgroup import Cgroup, current
group = Cgroup.enter(os.getpid(), table.start_time(os.getpid()))
assert current() == group.path, current()
(group.path / "dcode-1-1").mkdir()  # a dcode it ran, killed: its cgroup empty and left behind
group.leave()
print(current() == group.origin, group.path.exists())
"""


@pytest.mark.skipif(
    cgroup.usable_parent() is None,
    reason="no writable cgroup v2 here (the records and the subreaper cover this machine)",
)
def test_leaving_removes_dcodes_cgroup_and_those_of_killed_dcodes_inside() -> None:
    result = subprocess.run(
        [sys.executable, "-c", LEAVING], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]
