"""Helper processes (git, ripgrep) run without blocking the loop and never left behind.

Cancellation is the common way a search ends early (the user interrupts the turn, or the grep
cap is reached), so every helper here kills its process on the way out. ``env`` is the backend's
scrubbed environment (see ``environment``): a helper is a process the repository can influence
(git runs its hooks and configured commands), so it gets no more secrets than the shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# ripgrep's JSON lines hold whole matched lines; minified files make them long.
STREAM_LINE_LIMIT = 64 * 1024 * 1024


def find_program(name: str) -> str | None:
    """``name`` on ``PATH``'s absolute entries only: a relative entry (``.``,
    ``node_modules/.bin``) would find the workspace's own file of that name, and run it before
    anyone approved anything."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return shutil.which(
        name, path=os.pathsep.join(entry for entry in entries if os.path.isabs(entry))
    )


@dataclass(frozen=True, slots=True)
class Captured:
    returncode: int
    stdout: bytes
    stderr: bytes


async def run_capture(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
) -> Captured:
    """Run to completion and collect both streams (for short, bounded outputs)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await proc.communicate()
    finally:
        await _reap(proc)
    return Captured(returncode=proc.returncode or 0, stdout=stdout, stderr=stderr)


@contextlib.asynccontextmanager
async def stream_lines(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, AsyncIterator[bytes]]]:
    """Yield the process and its stdout lines; leaving the block kills it if still running.

    stderr goes to a pipe the caller may read after the lines run out (ripgrep reports a bad
    regex there); it is small, so it cannot fill up and stall the process.
    """
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=STREAM_LINE_LIMIT,
    )
    assert proc.stdout is not None

    async def lines() -> AsyncIterator[bytes]:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            yield line

    try:
        yield proc, lines()
    finally:
        await _reap(proc)


async def _reap(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    with contextlib.suppress(Exception):
        await proc.wait()
