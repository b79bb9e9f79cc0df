"""Proposed diffs for write_file and edit_file, computed without writing."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.agent.backends import LocalBackend
from dcode.agent.tools.diffs import proposed_diff


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(tmp_path)


async def test_edit_diff(backend: LocalBackend) -> None:
    (backend.root / "src").mkdir()
    (backend.root / "src/a.py").write_text("one\ntwo\nthree\n")
    diff = await proposed_diff(
        backend, "edit_file", {"file_path": "src/a.py", "old_string": "two", "new_string": "2"}
    )
    assert diff == ("--- a/src/a.py\n+++ b/src/a.py\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n")
    assert (backend.root / "src/a.py").read_text() == "one\ntwo\nthree\n"


async def test_edit_diff_replace_all(backend: LocalBackend) -> None:
    (backend.root / "a.py").write_text("x\nx\n")
    args = {"file_path": "a.py", "old_string": "x", "new_string": "y", "replace_all": True}
    diff = await proposed_diff(backend, "edit_file", args)
    assert "-x\n-x\n+y\n+y\n" in diff


async def test_write_diff_for_new_file(backend: LocalBackend) -> None:
    diff = await proposed_diff(backend, "write_file", {"file_path": "new.txt", "content": "hi\n"})
    assert diff == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n"
    assert not (backend.root / "new.txt").exists()


async def test_write_diff_overwrite_without_final_newline(backend: LocalBackend) -> None:
    (backend.root / "f.txt").write_text("old\n")
    diff = await proposed_diff(backend, "write_file", {"file_path": "f.txt", "content": "new"})
    assert diff == (
        "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-old\n+new\n\\ No newline at end of file\n"
    )


async def test_absolute_path_outside_workspace(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "ws")
    target = tmp_path / "elsewhere.txt"
    diff = await proposed_diff(backend, "write_file", {"file_path": str(target), "content": "x\n"})
    assert diff.startswith(f"--- /dev/null\n+++ {target}\n")


async def test_no_diff_when_it_cannot_apply(backend: LocalBackend) -> None:
    (backend.root / "a.py").write_text("x\nx\n")
    cases: list[tuple[str, dict[str, object]]] = [
        ("edit_file", {"file_path": "a.py", "old_string": "missing", "new_string": "y"}),
        ("edit_file", {"file_path": "a.py", "old_string": "x", "new_string": "y"}),
        ("edit_file", {"file_path": "a.py", "old_string": "x", "new_string": "x"}),
        ("edit_file", {"file_path": "nope.py", "old_string": "x", "new_string": "y"}),
        ("edit_file", {"file_path": "a.py"}),
        ("write_file", {"file_path": "a.py", "content": "x\nx\n"}),
        ("write_file", {"file_path": "a.py", "content": 3}),
        ("execute", {"command": "rm -rf /"}),
        ("read_file", {"file_path": "a.py"}),
    ]
    for name, args in cases:
        assert await proposed_diff(backend, name, args) == "", (name, args)
