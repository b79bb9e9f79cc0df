"""Where ``@`` completion's file list comes from, in batches, so the first names show at once.

Best first, like the search tools (``dcode/agent/backends/listing.py``):

* ``rg --files``: what grep and glob see (hidden files listed, ``.gitignore`` honoured in and
  out of a git repository, the user's ripgrep config ignored);
* ``git ls-files --cached --others --exclude-standard`` inside a work tree, with nothing the
  repository configures able to run (``safe_git``);
* a walk with the project's own ``.gitignore`` matcher.

Every source skips the usual heavy directories (``SKIP_DIRS``) even when nothing ignores them.
Names travel NUL-separated, so a name holding a newline stays one name; a name no prompt can
hold as an ``@`` token (a control character, bytes that are not UTF-8) is left out, which also
keeps it from writing escape sequences to the terminal.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from pathlib import Path

from dcode.agent.backends.listing import iter_files, kept_entries, rg_base_args
from dcode.agent.backends.procs import find_program, stream_lines
from dcode.agent.backends.safe_git import asafe_git

SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".hg",
        ".svn",
    }
)
CHUNK_BYTES = 256 * 1024
WALK_BATCH = 2_000
# C0 and C1 controls, and the lone surrogates that undecodable bytes become.
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def showable(name: str) -> bool:
    return _UNSHOWABLE.search(name) is None


async def workspace_files(root: Path) -> AsyncGenerator[list[str], None]:
    """Batches of files under ``root``, relative and "/"-separated, from the best source there is."""
    if (rg := find_program("rg")) is not None:
        try:
            async for batch in _rg_files(rg, root):
                yield batch
            return
        except OSError:
            pass  # not runnable after all: the next source
    if (git := find_program("git")) is not None:
        listed = False
        async for batch in _git_files(git, root):
            listed = True
            yield batch
        if listed:
            return
    for batch in _batched(_walked(root), WALK_BATCH):
        yield batch


async def _rg_files(rg: str, root: Path) -> AsyncIterator[list[str]]:
    prune = [part for name in sorted(SKIP_DIRS) for part in ("--glob", f"!{name}")]
    argv = [*rg_base_args(rg), *prune, "--files", "--null", "."]
    async with stream_lines(argv, cwd=root) as (process, _lines):
        async for names in _null_separated(process.stdout):
            yield [name.removeprefix("./") for name in names]
        await process.wait()  # reaped here, not killed on the way out after it ended


async def _git_files(git: str, root: Path) -> AsyncIterator[list[str]]:
    """Nothing outside a work tree, or where the repository cannot be made safe."""
    safe = await asafe_git(root, git)
    if safe is None:
        return
    argv = safe.argv("ls-files", "--cached", "--others", "--exclude-standard", "-z")
    seen: set[str] = set()
    try:
        async with stream_lines(argv, cwd=root, env=safe.env) as (process, _lines):
            async for names in _null_separated(process.stdout):
                # --cached repeats a conflicted file per stage and keeps files deleted since.
                kept = [name for name in names if name not in seen and _git_keeps(root, name)]
                seen.update(kept)
                yield kept
            await process.wait()
    except OSError:
        return


def _git_keeps(root: Path, name: str) -> bool:
    if any(part in SKIP_DIRS for part in name.split("/")[:-1]):
        return False
    return os.path.lexists(os.path.join(root, name))


async def _null_separated(stream: asyncio.StreamReader | None) -> AsyncIterator[list[str]]:
    """The showable names in a NUL-terminated stream, a chunk's worth at a time.

    A chunk is split on NUL before decoding, so a character cut by the chunk's end waits for
    the rest of its bytes.
    """
    assert stream is not None  # stream_lines pipes stdout
    pending = b""
    while chunk := await stream.read(CHUNK_BYTES):
        complete, _, pending = (pending + chunk).rpartition(b"\0")
        if complete:
            yield _showable(os.fsdecode(complete).split("\0"))
    if pending:
        yield _showable([os.fsdecode(pending)])


def _showable(names: list[str]) -> list[str]:
    if showable("".join(names)) and "" not in names:
        return names  # the common case: one search for the whole chunk
    return [name for name in names if name and showable(name)]


def directory_entries(root: Path, directory: str) -> list[str]:
    """The entries of ``directory`` (relative, "/"-separated) as ``directory/name`` and
    ``directory/sub/``, read directly rather than from a walk; none for a path that is not a
    plain one inside ``root`` (``..``, ``.``, absolute) or not a directory."""
    if not directory or any(part in ("", ".", "..") for part in directory.split("/")):
        return []
    target = root / directory
    try:
        if not target.is_dir() or not target.resolve().is_relative_to(root.resolve()):
            return []
    except OSError:
        return []
    return [
        f"{directory}/{name}/" if is_dir else f"{directory}/{name}"
        for name, is_dir in kept_entries(target, root, prune=SKIP_DIRS)
        if showable(name)
    ]


def _walked(root: Path) -> Iterable[str]:
    prefix = len(str(root).rstrip(os.sep)) + 1
    for path in iter_files(root, root, prune=SKIP_DIRS):
        name = str(path)[prefix:].replace(os.sep, "/")
        if showable(name):
            yield name


def _batched(names: Iterable[str], size: int) -> Iterable[list[str]]:
    batch: list[str] = []
    for name in names:
        batch.append(name)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
