"""The ``@`` file index without the UI: its three sources, streaming, the cap, re-walks.

Each source is chosen the way a user's machine chooses it, through ``PATH``: ripgrep where it
is installed, git alone (a ``PATH`` holding only git), or neither (an empty ``PATH``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcode.tui.widgets.file_index import FileIndex, scan_workspace
from dcode.tui.widgets.file_sources import directory_entries
from tests.support.file_trees import (
    SOURCES,
    make_files,
    make_hostile_files,
    scratch_directory,
    use_source,
)


def make_tree(root: Path, *, git: bool) -> None:
    for relative in (
        "src/app.py",
        "src/deep/er/mod.py",
        ".github/ci.yml",
        "README.md",
        "build.log",
        "node_modules/pkg/index.js",
        "src/.venv/lib/x.py",
        "sub/keep.txt",
        "sub/drop.tmp",
    ):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x")
    (root / ".gitignore").write_text("*.log\n")
    (root / "sub" / ".gitignore").write_text("*.tmp\n")
    make_hostile_files(root / "src")
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)


EXPECTED = {
    "src/app.py",
    "src/deep/er/mod.py",
    ".github/ci.yml",
    "README.md",
    ".gitignore",
    "sub/.gitignore",
    "sub/keep.txt",
    "src/",
    "src/deep/",
    "src/deep/er/",
    ".github/",
    "sub/",
}


@pytest.mark.parametrize("source", SOURCES)
def test_every_source_lists_the_same_showable_files(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_tree(root, git=source != "walk")
    use_source(source, monkeypatch, tmp_path / "bin")
    paths = scan_workspace(root)
    # A name with a newline is one name (never "two" and "lines.txt"), and every name with a
    # control character or bytes that are not UTF-8 is left out: none can be an @ token.
    assert set(paths) == EXPECTED
    assert len(paths) == len(EXPECTED)


@pytest.fixture(scope="module")
def big_tree() -> Iterator[Path]:
    with scratch_directory() as root:
        make_files(root, 30_000)
        yield root


def test_a_walk_is_matched_while_it_streams(big_tree: Path) -> None:
    index = FileIndex(big_tree)
    seen: list[tuple[int, bool, bool]] = []

    def progress() -> None:  # in the walk's own thread, as the prompt's worker runs it
        seen.append((index.size, index.complete, bool(index.match("f0999"))))

    index.scan(progress=progress)
    partial = [entry for entry in seen if not entry[1]]
    assert partial and partial[0][0] < 30_000  # paths were offered before the walk ended
    assert seen[-1] == (30_030, True, True)
    assert index.files == 30_000 and not index.capped
    assert {match.path for match in index.match("d029/f0999")} >= {"d029/f0999.txt"}


def test_the_cap_is_reported_and_a_typed_directory_still_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_files(root, 40, prefix="a")
    (root / "zz" / "deep").mkdir(parents=True)
    for relative in ("zz/deep/needle.txt", "zz/deep/skip.log", "zz/deep/node_modules/x.js"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x")
    (root / "zz" / ".gitignore").write_text("*.log\n")
    use_source("walk", monkeypatch, tmp_path / "bin")  # name order: zz/ comes last
    index = FileIndex(root, cap=25)
    index.scan()
    assert index.capped and index.complete and index.files == 25
    assert not any(path.startswith("zz") for path in index.paths)
    assert [match.path for match in index.match("zz/deep/nee")] == ["zz/deep/needle.txt"]
    assert [match.path for match in index.match("zz/deep/")] == ["zz/deep/needle.txt"]
    assert [match.path for match in index.match("zz/")] == ["zz/deep/", "zz/.gitignore"]


def test_a_directory_outside_the_workspace_is_not_listed(tmp_path: Path) -> None:
    (tmp_path / "ws" / "in").mkdir(parents=True)
    (tmp_path / "ws" / "in" / "a.txt").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("x")
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "outside")
    root = tmp_path / "ws"
    assert directory_entries(root, "in") == ["in/a.txt"]
    for directory in ("../outside", "link", "/etc", "in/..", "./in", ""):
        assert directory_entries(root, directory) == []


def test_a_second_walk_answers_from_the_first_until_it_is_done(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("x")
    index = FileIndex(tmp_path, max_age=0.0)
    index.scan()
    assert index.paths == ["old.txt"]
    (tmp_path / "new.txt").write_text("x")
    during: list[tuple[bool, list[str]]] = []
    index.scan(progress=lambda: during.append((index.complete, index.paths)))
    # While it walks, the finished index answers (complete, without the new file); then the new one.
    assert [(complete, sorted(paths)) for complete, paths in during] == [
        (True, ["old.txt"]),
        (True, ["new.txt", "old.txt"]),
    ]


def test_a_stopped_walk_leaves_the_index_due_again_and_no_process_behind(big_tree: Path) -> None:
    before = set(child_processes())  # other tests' children are not this walk's
    index = FileIndex(big_tree)
    index.scan(stop=lambda: True)  # the prompt's worker was cancelled after the first batch
    assert not index.complete and index.stale()
    assert 0 < index.files < 30_000
    assert [pid for pid in child_processes() if pid not in before] == []


def child_processes() -> list[str]:
    """This process's live children, by pid (Linux's /proc; empty elsewhere)."""
    tasks = Path(f"/proc/{os.getpid()}/task")
    if not tasks.is_dir():
        return []
    return [pid for task in tasks.iterdir() for pid in (task / "children").read_text().split()]
