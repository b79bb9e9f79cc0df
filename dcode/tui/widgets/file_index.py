"""The workspace's file list for ``@path`` completion, and the matcher that ranks it.

``scan`` blocks (a git call or a directory walk), so the input box runs it in a thread worker.
Inside a git repository the list is ``git ls-files --cached --others --exclude-standard``
(run so that nothing the repository configures can run: ``safe_git``), so ignored files never
show; elsewhere it walks the tree, pruning the usual heavy directories and honouring the root
``.gitignore`` in a simple form. Either way it stops at ``cap`` files.
"""

from __future__ import annotations

import fnmatch
import heapq
import os
import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CAP = 20_000
SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".hg", ".svn"}
)
GIT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class FileMatch:
    path: str  # relative, "/"-separated; directories end with "/"
    positions: tuple[int, ...]  # matched character indexes, for highlighting


def scan_workspace(root: Path, *, cap: int = DEFAULT_CAP) -> list[str]:
    """Relative file paths under ``root`` followed by their directories (``dir/``), at most ``cap`` files."""
    files = _git_files(root, cap)
    if files is None:
        files = _walk_files(root, cap)
    directories: dict[str, None] = {}
    for path in files:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            directories.setdefault("/".join(parts[:depth]) + "/", None)
    return files + list(directories)


def _skipped(path: str) -> bool:
    return any(part in SKIP_DIRS for part in path.split("/")[:-1])


def _git_files(root: Path, cap: int) -> list[str] | None:
    from dcode.agent.backends.procs import find_program  # in the scan's thread, not at startup
    from dcode.agent.backends.safe_git import safe_git

    executable = find_program("git")
    git = safe_git(root, executable) if executable else None
    if git is None:
        return None
    command = git.argv("-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    try:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=git.env
        )
    except OSError:
        return None
    files: list[str] = []
    seen: set[str] = set()
    deadline = time.monotonic() + GIT_TIMEOUT
    buffer = b""
    assert process.stdout is not None
    try:
        while len(files) < cap and time.monotonic() < deadline:
            chunk = process.stdout.read1(65536)
            if not chunk:
                break
            buffer += chunk
            *names, buffer = buffer.split(b"\0")
            for raw in names:
                name = os.fsdecode(raw)
                if not name or name in seen or _skipped(name):
                    continue
                if not os.path.lexists(os.path.join(root, name)):
                    continue  # tracked but deleted in the worktree
                seen.add(name)
                files.append(name)
                if len(files) >= cap:
                    break
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
    if process.returncode not in (0, -9) and not files:
        return None  # not a repository (or git failed): fall back to walking
    return files


def _read_gitignore(root: Path) -> list[str]:
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "!"))]


def _ignored(relative: str, name: str, is_dir: bool, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        directory_only = pattern.endswith("/")
        pattern = pattern.strip("/")
        if directory_only and not is_dir:
            continue
        target = relative if "/" in pattern else name
        if fnmatch.fnmatch(target, pattern):
            return True
    return False


def _walk_files(root: Path, cap: int) -> list[str]:
    patterns = _read_gitignore(root)
    files: list[str] = []
    for current, dirs, names in os.walk(root):
        base = os.path.relpath(current, root)
        prefix = "" if base == "." else base.replace(os.sep, "/") + "/"
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS and not _ignored(prefix + d, d, True, patterns)
        )
        for name in sorted(names):
            relative = prefix + name
            if _ignored(relative, name, False, patterns):
                continue
            files.append(relative)
            if len(files) >= cap:
                return files
    return files


class FileIndex:
    """A snapshot of the workspace's paths with a fuzzy matcher over them.

    ``scan`` runs in a thread while the UI thread may call ``match``; the snapshot is swapped in
    as one tuple, so a reader never sees half of an update.
    """

    def __init__(self, root: Path, *, cap: int = DEFAULT_CAP) -> None:
        self.root = root
        self.cap = cap
        self._data: tuple[list[str], list[str], list[FileMatch]] = ([], [], [])
        self.scanned_at: float | None = None

    @property
    def ready(self) -> bool:
        return self.scanned_at is not None

    @property
    def paths(self) -> list[str]:
        return self._data[0]

    def scan(self) -> list[str]:
        """Blocking; run it in a thread. Returns the list it will use from now on."""
        paths = scan_workspace(self.root, cap=self.cap)
        self.set_paths(paths)
        return paths

    def set_paths(self, paths: list[str]) -> None:
        shallow = [FileMatch(path, ()) for path in sorted(paths, key=_shallow_first)[:200]]
        self._data = (paths, [path.lower() for path in paths], shallow)
        self.scanned_at = time.monotonic()

    def stale(self, max_age: float) -> bool:
        return self.scanned_at is None or time.monotonic() - self.scanned_at > max_age

    def match(self, query: str, *, limit: int = 50) -> list[FileMatch]:
        """Rank paths for ``query``: name prefix, then path prefix, substring, then subsequence."""
        paths, lowered, shallow = self._data
        if not query:
            return shallow[:limit]
        return rank_paths(query, paths, lowered, limit=limit)


def rank_paths(
    query: str, paths: list[str], lowered: list[str] | None = None, *, limit: int = 50
) -> list[FileMatch]:
    lowered = lowered if lowered is not None else [path.lower() for path in paths]
    needle = query.lower()
    if not needle:
        return [FileMatch(path, ()) for path in heapq.nsmallest(limit, paths, key=_shallow_first)]
    # "[^a]*a[^b]*b…" cannot backtrack, so a miss costs one linear pass in C.
    fuzzy = re.compile("".join(f"[^{re.escape(char)}]*{re.escape(char)}" for char in needle))
    scored: list[tuple[int, int, str, int]] = []
    for index, path in enumerate(lowered):
        if needle in path:
            name_start = path.rstrip("/").rfind("/") + 1
            at = path.find(needle, name_start)
            if at == name_start:
                tier = 0
            elif path.startswith(needle):
                tier = 1
            elif at >= 0:
                tier = 2
            else:
                tier = 3
        elif fuzzy.match(path):
            tier = 4
        else:
            continue
        scored.append((tier, len(path), path, index))
    results = []
    for tier, _length, path, index in heapq.nsmallest(limit, scored):
        results.append(FileMatch(paths[index], _positions(path, needle, tier)))
    return results


def _shallow_first(path: str) -> tuple[int, str]:
    """Top-level entries first (a directory counts at its own depth), then alphabetical."""
    return path.count("/") - path.endswith("/"), path


def _positions(path: str, needle: str, tier: int) -> tuple[int, ...]:
    if tier < 4:
        name_start = path.rstrip("/").rfind("/") + 1
        at = path.find(needle, name_start) if tier in (0, 2) else path.find(needle)
        return tuple(range(at, at + len(needle)))
    positions: list[int] = []
    at = 0
    for char in needle:
        at = path.find(char, at)
        if at < 0:
            return ()
        positions.append(at)
        at += 1
    return tuple(positions)
