"""Which files a search may look at: everything under a directory that git would not ignore.

Three ways, best first, all yielding the same set for ordinary trees (hidden files included,
``.git/`` excluded, ``.gitignore`` honoured even outside a git repo):

* ``rg --files`` — fast, and what the ripgrep grep path sees, so glob and grep agree;
* ``git ls-files --cached --others --exclude-standard`` — exact git semantics (global excludes,
  ``info/exclude``, nested repos), used inside a work tree when ripgrep is missing, with
  nothing the repository configures able to run (``safe_git``);
* a Python walk with our own ``.gitignore`` matcher — for a plain directory without either tool.

When the start directory is itself ignored (the model asked for ``node_modules/x`` by name), git
lists nothing; like ripgrep we then search it anyway, with the walker.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from dcode.agent.backends.gitignore import IgnoreMatcher, parse_ignore_file
from dcode.agent.backends.procs import run_capture
from dcode.agent.backends.safe_git import asafe_git
from dcode.regular_files import read_regular

IGNORE_FILE = ".gitignore"
GIT_DIR = ".git"


def rg_base_args(rg: str) -> list[str]:
    """Flags that make ripgrep see what git sees, independent of the user's rg config."""
    return [rg, "--no-config", "--hidden", "--no-require-git", "--glob", "!.git", "--no-messages"]


async def rg_files(rg: str, start: Path, *, env: Mapping[str, str] | None = None) -> list[Path]:
    result = await run_capture([*rg_base_args(rg), "--files", "--null", "."], cwd=start, env=env)
    return [start / name.removeprefix("./") for name in _split_null(result.stdout)]


async def git_files(
    start: Path, git_program: str = "git", *, env: Mapping[str, str] | None = None
) -> list[Path] | None:
    """Files git would track or add under ``start``; ``None`` outside a work tree, without git,
    or in a repository whose configuration cannot be made safe (``safe_git``). ``env``: the
    environment git starts from (the backend's scrubbed one)."""
    git = await asafe_git(start, git_program, env=env)
    if git is None:
        return None
    try:
        result = await run_capture(
            git.argv("ls-files", "--cached", "--others", "--exclude-standard", "-z"),
            cwd=start,
            env=git.env,
        )
    except OSError:
        return None
    if result.returncode != 0:
        return None
    # --cached lists files deleted from the work tree and submodule directories; drop both.
    candidates = [start / name for name in dict.fromkeys(_split_null(result.stdout))]
    return await asyncio.to_thread(lambda: [p for p in candidates if p.is_file()])


def walk_files(start: Path, anchor: Path) -> list[Path]:
    """Files under ``start`` not ignored by the ``.gitignore`` files from ``anchor`` down.

    ``anchor`` is where ignore files start to count (the workspace root, or ``start`` when it
    lies outside the workspace); files between ``anchor`` and ``start`` still apply.
    """
    return sorted(iter_files(start, anchor))


def iter_files(start: Path, anchor: Path, *, prune: frozenset[str] = frozenset()) -> Iterator[Path]:
    """``walk_files`` as it goes (each directory in name order, depth first), for a caller that
    shows the first files before the walk ends; directories named in ``prune`` are not entered."""
    return _walk(start, _relative(start, anchor), _matcher_above(start, anchor), prune)


def kept_entries(
    directory: Path, anchor: Path, *, prune: frozenset[str] = frozenset(), limit: int = 10_000
) -> list[tuple[str, bool]]:
    """The first ``limit`` entries of one directory that a walk from ``anchor`` would keep, as
    (name, is a directory): a lookup that need not wait for a whole walk."""
    matcher = _matcher_above(directory, anchor)
    base = _relative(directory, anchor)
    matcher = matcher.with_rules(base, parse_ignore_file(_read_quietly(directory / IGNORE_FILE)))
    kept: list[tuple[str, bool]] = []
    try:
        with os.scandir(directory) as scan:
            for entry in scan:
                if len(kept) >= limit:
                    break
                if (kind := _kind(entry, base, matcher, prune)) is not None:
                    kept.append((entry.name, kind))
    except OSError:
        return []
    return sorted(kept)


def _matcher_above(start: Path, anchor: Path) -> IgnoreMatcher:
    matcher = IgnoreMatcher()
    exclude = anchor / GIT_DIR / "info" / "exclude"
    matcher = matcher.with_rules("", parse_ignore_file(_read_quietly(exclude)))
    rel = _relative(start, anchor)
    directories = [anchor]
    for part in Path(rel).parts if rel else ():
        directories.append(directories[-1] / part)
    for directory in directories[:-1]:
        base = _relative(directory, anchor)
        matcher = matcher.with_rules(
            base, parse_ignore_file(_read_quietly(directory / IGNORE_FILE))
        )
    return matcher


def _walk(
    directory: Path, base: str, matcher: IgnoreMatcher, prune: frozenset[str]
) -> Iterator[Path]:
    matcher = matcher.with_rules(base, parse_ignore_file(_read_quietly(directory / IGNORE_FILE)))
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        match _kind(entry, base, matcher, prune):
            case True:
                yield from _walk(Path(entry.path), _joined(base, entry.name), matcher, prune)
            case False:
                yield Path(entry.path)


def _kind(
    entry: os.DirEntry[str], base: str, matcher: IgnoreMatcher, prune: frozenset[str]
) -> bool | None:
    """True for a directory to enter, False for a file to keep, None for anything skipped."""
    rel = _joined(base, entry.name)
    try:
        is_dir = entry.is_dir(follow_symlinks=False)
        is_file = entry.is_file()
    except OSError:
        return None
    if is_dir:
        skipped = (
            entry.name == GIT_DIR or entry.name in prune or matcher.is_ignored(rel, is_dir=True)
        )
        return None if skipped else True
    return False if is_file and not matcher.is_ignored(rel, is_dir=False) else None


def _joined(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name


def _relative(path: Path, anchor: Path) -> str:
    rel = os.path.relpath(path, anchor)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _read_quietly(path: Path) -> str:
    """An ignore file's text; "" when missing, unreadable or not a regular file (a named pipe
    in its place would stall the walk for ever)."""
    try:
        return read_regular(path).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _split_null(data: bytes) -> list[str]:
    return [os.fsdecode(chunk) for chunk in data.split(b"\0") if chunk]
