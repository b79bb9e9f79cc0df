"""Trees of many empty files, for the ``@`` file index's tests and benchmark.

Made in a RAM file system (``/dev/shm``) when the machine has one: a hundred thousand files
take seconds there and can take minutes on a busy disk. Either way they are real files in real
directories that ripgrep, git and ``os.scandir`` read like any other.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

RAM_DIR = Path("/dev/shm")
PER_DIRECTORY = 1_000
RG = shutil.which("rg")
GIT = shutil.which("git")
# Names that break a newline-separated list, or write to the terminal when drawn.
HOSTILE_NAMES = (
    b"two\nlines.txt",
    b"clear\x1b[2J.txt",
    b"bell\x07.txt",
    b"not-utf8-\xff.txt",
    b"c1-\xc2\x9b31m.txt",
)


def scratch_parent() -> Path | None:
    return RAM_DIR if RAM_DIR.is_dir() and os.access(RAM_DIR, os.W_OK | os.X_OK) else None


@contextlib.contextmanager
def scratch_directory() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dcode-tree-", dir=scratch_parent()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def make_files(root: Path, count: int, *, prefix: str = "d") -> list[str]:
    """``count`` empty files, ``PER_DIRECTORY`` to a directory (``d000/f0000.txt`` …), in
    name order; their relative paths."""
    made: list[str] = []
    for number in range(count):
        directory, file = divmod(number, PER_DIRECTORY)
        relative = f"{prefix}{directory:03d}/f{file:04d}.txt"
        if file == 0:
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(root / relative, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        made.append(relative)
    return made


def make_hostile_files(directory: Path) -> None:
    for name in HOSTILE_NAMES:
        with open(os.path.join(os.fsencode(directory), name), "wb"):
            pass


def use_source(source: str, monkeypatch: pytest.MonkeyPatch, bin_dir: Path) -> None:
    """``PATH`` holding exactly what picks ``source`` for the index: "rg" (ripgrep and git),
    "git" (git alone) or "walk" (neither)."""
    bin_dir.mkdir(exist_ok=True)
    wanted = {"rg": [RG, GIT], "git": [GIT], "walk": []}[source]
    for program in filter(None, wanted):
        target = bin_dir / Path(program).name
        if not target.exists():
            target.symlink_to(program)
    monkeypatch.setenv("PATH", str(bin_dir))


SOURCES = [
    pytest.param("rg", marks=pytest.mark.skipif(RG is None, reason="rg not installed")),
    pytest.param("git", marks=pytest.mark.skipif(GIT is None, reason="git not installed")),
    "walk",
]
