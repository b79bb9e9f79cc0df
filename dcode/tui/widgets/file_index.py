"""The workspace's paths for ``@path`` completion, filled as a walk streams in, and the matcher.

A walk (``file_sources``: ripgrep, else git, else a Python walk) runs in a worker thread and
appends batches while the UI matches what has arrived so far, so the first suggestions show
before the walk ends and the last match after it sees everything. A finished index is walked
again, lazily, on the first ``@`` after ``max_age`` seconds (longer for trees that take long to
walk), and the old one answers until the new one is complete.

Only ``cap`` files are kept, a bound on memory for pathological trees; when a walk stops there,
``capped`` says so (the popup tells the user), and a query with a directory part still
completes from that directory, read directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress, islice, repeat
from itertools import count as counter
from operator import contains
from pathlib import Path

DEFAULT_CAP = 1_000_000
REFRESH_AFTER = 10.0  # seconds: a finished index is walked again on the next `@` after this
REFRESH_PER_WALK = 20  # ...or after this many times as long as the last walk took
PROGRESS_EVERY = 0.1  # seconds between "more files arrived" calls during a walk
SHALLOW_DEPTH = 1  # what an empty query offers comes from this deep at most, when enough does

_walk_numbers = counter(1)


@dataclass(frozen=True, slots=True)
class FileMatch:
    path: str  # relative, "/"-separated; directories end with "/"
    positions: tuple[int, ...]  # matched character indexes, for highlighting


@dataclass(eq=False, slots=True)
class _Walk:
    """One walk's paths so far. Only the walking thread appends; a reader takes ``count``
    first and looks no further, so it never sees a path added to one list but not the other."""

    cap: int
    number: int = field(default_factory=lambda: next(_walk_numbers))
    paths: list[str] = field(default_factory=list)
    lowered: list[str] = field(default_factory=list)
    shallow: list[str] = field(default_factory=list)
    directories: set[str] = field(default_factory=set)
    files: int = 0
    count: int = 0
    shallow_count: int = 0
    capped: bool = False
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None

    def add_files(self, names: list[str]) -> None:
        """Files and, once each, the directories above them (``dir/``)."""
        for name in names:
            if self.files >= self.cap:
                self.capped = True
                break
            self.files += 1
            self._append(name)
            end = name.rfind("/")
            while end > 0 and (directory := name[: end + 1]) not in self.directories:
                self.directories.add(directory)
                self._append(directory)
                end = name.rfind("/", 0, end)
        self._publish()

    def add_paths(self, paths: list[str]) -> None:
        for path in paths:
            self._append(path)
        self.files = sum(not path.endswith("/") for path in self.paths)
        self._publish()

    def _append(self, path: str) -> None:
        lowered = path.lower()
        self.paths.append(path)
        self.lowered.append(path if lowered == path else lowered)  # most paths: one string
        if _depth(path) <= SHALLOW_DEPTH:
            self.shallow.append(path)

    def _publish(self) -> None:
        self.shallow_count = len(self.shallow)
        self.count = len(self.paths)


def scan_workspace(root: Path, *, cap: int = DEFAULT_CAP) -> list[str]:
    """Relative file paths under ``root`` and their directories (``dir/``), at most ``cap`` files."""
    index = FileIndex(root, cap=cap)
    index.scan()
    return index.paths


def _never() -> bool:
    return False


def _nothing() -> None:
    return None


class FileIndex:
    """The workspace's paths with a fuzzy matcher over them; see the module's docstring.

    ``scan`` runs in a thread while the UI thread calls ``match`` and reads the properties; the
    index in use is swapped as one reference, so a reader sees one walk or the other.
    """

    def __init__(
        self, root: Path, *, cap: int = DEFAULT_CAP, max_age: float = REFRESH_AFTER
    ) -> None:
        self.root = root
        self.cap = cap
        self.max_age = max_age
        self._live = _Walk(cap)

    @property
    def ready(self) -> bool:
        """Something to match against: paths have arrived, or a walk found there are none."""
        walk = self._live
        return walk.count > 0 or walk.finished is not None

    @property
    def complete(self) -> bool:
        return self._live.finished is not None

    @property
    def capped(self) -> bool:
        return self._live.capped

    @property
    def files(self) -> int:
        return self._live.files

    @property
    def size(self) -> int:
        return self._live.count

    @property
    def version(self) -> tuple[int, int, bool]:
        """Changes whenever a match could answer differently."""
        walk = self._live
        return walk.number, walk.count, walk.finished is not None

    @property
    def paths(self) -> list[str]:
        walk = self._live
        return walk.paths[: walk.count]

    def scan(
        self, *, stop: Callable[[], bool] = _never, progress: Callable[[], None] = _nothing
    ) -> None:
        """Walk the workspace (blocking; run it in a thread). ``progress`` is called from that
        thread as paths arrive and once at the end; ``stop`` is asked between batches."""
        walk = _Walk(self.cap)
        if self._live.finished is None:
            self._live = walk  # nothing complete to show meanwhile: show this one as it grows
        asyncio.run(self._fill(walk, stop, progress))
        if stop():
            return
        walk.finished = time.monotonic()
        self._live = walk
        progress()

    async def _fill(
        self, walk: _Walk, stop: Callable[[], bool], progress: Callable[[], None]
    ) -> None:
        from dcode.tui.widgets.file_sources import (
            workspace_files,  # off the UI's import path
        )

        shown = 0.0
        async with contextlib.aclosing(workspace_files(self.root)) as batches:
            async for batch in batches:
                walk.add_files(batch)
                if walk.capped or stop():
                    return
                if (now := time.monotonic()) - shown >= PROGRESS_EVERY:
                    shown = now
                    progress()

    def set_paths(self, paths: list[str]) -> None:
        """Use exactly ``paths`` (files and ``dir/`` entries) as a finished index."""
        walk = _Walk(self.cap)
        walk.add_paths(paths)
        walk.finished = time.monotonic()
        self._live = walk

    def stale(self) -> bool:
        """Due for a walk: none has finished, or the last one is old."""
        walk = self._live
        if walk.finished is None:
            return True
        max_age = max(self.max_age, REFRESH_PER_WALK * (walk.finished - walk.started))
        return time.monotonic() - walk.finished > max_age

    def match(self, query: str, *, limit: int = 50) -> list[FileMatch]:
        """Rank paths for ``query``: name prefix, then path prefix, substring, then subsequence.

        While the index is partial (walking, or stopped at the cap), a query with a directory
        part also looks in that directory itself, which may not be indexed yet (or ever).
        """
        walk = self._live
        count = walk.count
        if not query:
            pool = (
                walk.shallow[: walk.shallow_count]
                if walk.shallow_count >= limit
                else walk.paths[:count]
            )
            return [
                FileMatch(path, ()) for path in heapq.nsmallest(limit, pool, key=_shallow_first)
            ]
        found = rank_paths(query, walk.paths, walk.lowered, limit=limit, count=count)
        if "/" in query and (walk.finished is None or walk.capped):
            found = self._with_directory(query, found, limit)
        return found

    def _with_directory(self, query: str, found: list[FileMatch], limit: int) -> list[FileMatch]:
        from dcode.tui.widgets.file_sources import directory_entries

        listed = directory_entries(self.root, query.rpartition("/")[0])
        if not listed:
            return found
        # Ranking depends on the path alone, so re-ranking the union gives the union's best.
        pool = list(dict.fromkeys([match.path for match in found] + listed))
        return rank_paths(query, pool, limit=limit)


def rank_paths(
    query: str,
    paths: list[str],
    lowered: list[str] | None = None,
    *,
    limit: int = 50,
    count: int | None = None,
) -> list[FileMatch]:
    """The best ``limit`` of the first ``count`` paths (all by default) for ``query``."""
    count = len(paths) if count is None else count
    lowered = lowered if lowered is not None else [path.lower() for path in paths]
    needle = query.lower()
    if not needle:
        return [
            FileMatch(path, ())
            for path in heapq.nsmallest(limit, paths[:count], key=_shallow_first)
        ]
    # Both passes run in C (compress, map, a builtin or a compiled pattern): no Python per path.
    candidates = list(compress(counter(), map(contains, islice(lowered, count), repeat(needle))))
    if len(candidates) < limit:
        # Subsequences rank below every substring, and every substring is one: when substrings
        # run short, "[^a]*a[^b]*b…" (which cannot backtrack) finds them all.
        fuzzy = re.compile("".join(f"[^{re.escape(char)}]*{re.escape(char)}" for char in needle))
        candidates = list(compress(counter(), map(fuzzy.match, islice(lowered, count))))
    scored = [
        (_tier(lowered[index], needle), len(lowered[index]), lowered[index], index)
        for index in candidates
    ]
    return [
        FileMatch(paths[index], _positions(path, needle, tier))
        for tier, _length, path, index in heapq.nsmallest(limit, scored)
    ]


def _tier(path: str, needle: str) -> int:
    """0: the name starts with it; 1: the path does; 2: the name holds it; 3: the path does;
    4: it is only a subsequence."""
    if needle not in path:
        return 4
    name_start = path.rstrip("/").rfind("/") + 1
    at = path.find(needle, name_start)
    if at == name_start:
        return 0
    if path.startswith(needle):
        return 1
    return 2 if at >= 0 else 3


def _depth(path: str) -> int:
    return path.count("/") - path.endswith("/")


def _shallow_first(path: str) -> tuple[int, str]:
    """Top-level entries first (a directory counts at its own depth), then alphabetical."""
    return _depth(path), path


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
