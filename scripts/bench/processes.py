"""Benchmark: what tracking the process trees costs.

Each case runs in a fresh process:
- a shell command (``true``) through the real backend, 50 times, with the trees tracked as the
  ``dcode`` command tracks them (subreaper, records, a cgroup where one can be made) and without:
  the difference is the cost per command (target: <= 2 ms added per command);
- one scan of ``/proc`` (what a record update and the exit sweep read), with the number of
  processes on this machine (target: <= 20 ms; it runs off the event loop, in a thread);
- ending 20 background jobs, half of them ignoring SIGTERM, the way dcode does at exit
  (target: <= 1 s: the 0.3 s grace plus the kills).

Run: .venv/bin/python scripts/bench/processes.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = 50

CHILD = """
import asyncio, json, os, sys, tempfile, time
from pathlib import Path
from dcode.agent.backends import LocalBackend
from dcode.processes import table
from dcode.processes.trees import TREES

mode = sys.argv[1]
if mode == "tracked":
    TREES.install(Path(tempfile.mkdtemp()))

async def commands(n):
    backend = LocalBackend(Path(tempfile.mkdtemp()))
    await backend.execute("true")  # warm up
    start = time.perf_counter()
    for _ in range(n):
        await backend.execute("true")
    return (time.perf_counter() - start) / n

async def jobs():
    backend = LocalBackend(Path(tempfile.mkdtemp()))
    for i in range(10):
        await backend.execute("sleep 60 >/dev/null 2>&1 &")
        await backend.execute("sh -c 'trap \\"\\" TERM; exec sleep 60' >/dev/null 2>&1 &")

if mode in ("tracked", "untracked"):
    print(json.dumps({"per_command_ms": asyncio.run(commands(int(sys.argv[2]))) * 1000}))
elif mode == "scan":
    start = time.perf_counter()
    rounds = 20
    for _ in range(rounds):
        procs = table.snapshot()
    print(json.dumps({"scan_ms": (time.perf_counter() - start) / rounds * 1000, "processes": len(procs)}))
else:
    TREES.install(Path(tempfile.mkdtemp()))
    asyncio.run(jobs())
    start = time.perf_counter()
    TREES.end_all()
    print(json.dumps({"end_all_s": time.perf_counter() - start}))
"""


def run(*args: str) -> dict[str, float]:
    env_home = tempfile.mkdtemp()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "DCODE_HOME": env_home},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    untracked = run("untracked", str(COMMANDS))["per_command_ms"]
    tracked = run("tracked", str(COMMANDS))["per_command_ms"]
    print(f"shell command, untracked:       {untracked:7.2f} ms")
    print(
        f"shell command, tracked:         {tracked:7.2f} ms   added {tracked - untracked:+.2f} ms (target <= 2 ms)"
    )
    scan = run("scan")
    print(
        f"one /proc scan:                 {scan['scan_ms']:7.2f} ms   {scan['processes']:.0f} processes (target <= 20 ms)"
    )
    ended = run("end")["end_all_s"]
    print(f"ending 20 jobs (10 stubborn):   {ended * 1000:7.0f} ms   (target <= 1000 ms)")


if __name__ == "__main__":
    main()
