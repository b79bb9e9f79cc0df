"""Benchmark: what the sandbox adds to one shell command.

200 ``true`` commands through the real backend, unconfined and in the sandbox (bubblewrap,
workspace-write, network off); the medians' difference is the sandbox's cost per command
(target: <= 15 ms), and the CPU time the commands' processes used, which a busy machine does
not inflate as it does the wall time. The first sandboxed command, which also starts bubblewrap once to see that
it works, is timed on its own.

Run: .venv/bin/python scripts/bench/sandbox.py
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.environment import ShellEnvironment
from dcode.sandbox.confine import Sandbox
from dcode.sandbox.modes import SandboxMode, SandboxSettings
from dcode.sandbox.probe import availability

COMMANDS = 200
TARGET_MS = 15.0


async def timings(backend: LocalBackend, n: int) -> list[float]:
    took: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        result = await backend.execute("true")
        took.append((time.perf_counter() - start) * 1000)
        assert result.exit_code == 0, result.output
    return took


def children_cpu_ms() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


async def measured(backend: LocalBackend) -> tuple[float, float]:
    """(the median wall time of one command, the CPU its processes used on average), in ms:
    on a busy machine the wall time grows with the load, the CPU time hardly."""
    before = children_cpu_ms()
    took = await timings(backend, COMMANDS)
    return statistics.median(took), (children_cpu_ms() - before) / COMMANDS


async def main() -> int:
    found = availability()
    if not found.works:
        print(f"no sandbox here: {found.problem}")
        return 1
    workspace, home = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    plain = LocalBackend(workspace, environment=ShellEnvironment.of())
    boxed = LocalBackend(
        workspace,
        environment=ShellEnvironment.of(),
        sandbox=Sandbox(SandboxSettings(SandboxMode.WORKSPACE_WRITE), workspace, home),
    )
    first = (await timings(boxed, 1))[0]
    await timings(plain, 5)  # warm up
    bare, bare_cpu = await measured(plain)
    confined, confined_cpu = await measured(boxed)
    added = confined - bare
    print(f"sandbox: {found.kind} ({found.program}), {COMMANDS} commands each")
    print(f"true, unconfined (median):   {bare:7.2f} ms")
    print(
        f"true, in the sandbox:        {confined:7.2f} ms   added {added:+.2f} ms (target <= {TARGET_MS:g} ms)"
    )
    print(
        f"CPU per command (children):  {bare_cpu:7.2f} ms unconfined, {confined_cpu:.2f} ms sandboxed"
        "   (what load on the machine does not inflate)"
    )
    print(
        f"first sandboxed command:     {first:7.2f} ms   (starts bubblewrap once more to check it)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
