"""Path resolution and workspace containment of the local backend."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dcode.agent.backends import Backend, LocalBackend
from dcode.agent.backends.paths import split_glob_base


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    (tmp_path / "ws").mkdir()
    return LocalBackend(tmp_path / "ws")


def test_satisfies_protocol(backend: LocalBackend) -> None:
    typed: Backend = backend
    assert isinstance(typed, Backend)


def test_root_is_resolved(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert LocalBackend(tmp_path / "link").root == (tmp_path / "real").resolve()


def test_relative_paths_are_taken_from_root(backend: LocalBackend) -> None:
    assert backend.resolve("src/app.py") == backend.root / "src" / "app.py"
    assert backend.resolve(".") == backend.root
    assert backend.resolve("") == backend.root


def test_absolute_paths_are_kept(backend: LocalBackend) -> None:
    assert backend.resolve("/etc/hosts") == Path("/etc/hosts")


def test_dotdot_is_folded(backend: LocalBackend) -> None:
    assert backend.resolve("a/b/../c.py") == backend.root / "a" / "c.py"
    assert backend.resolve("../outside.txt") == backend.root.parent / "outside.txt"


def test_tilde_is_expanded(backend: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    assert backend.resolve("~/notes.md") == Path("/home/someone/notes.md")


def test_inside_workspace(backend: LocalBackend) -> None:
    assert backend.is_inside_workspace("src/new_file.py")
    assert backend.is_inside_workspace(".")
    assert backend.is_inside_workspace(str(backend.root / "x"))
    assert not backend.is_inside_workspace("../sibling")
    assert not backend.is_inside_workspace("/etc/passwd")


def test_prefix_sibling_is_not_inside(tmp_path: Path, backend: LocalBackend) -> None:
    (tmp_path / "ws-other").mkdir()
    assert not backend.is_inside_workspace(str(tmp_path / "ws-other" / "f"))


def test_symlink_escaping_workspace_is_not_inside(tmp_path: Path, backend: LocalBackend) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (backend.root / "escape").symlink_to(outside)
    (backend.root / "escape_file").symlink_to(tmp_path / "secret.txt")
    assert not backend.is_inside_workspace("escape")
    assert not backend.is_inside_workspace("escape/deeper/file.txt")
    assert not backend.is_inside_workspace("escape_file")


def test_symlink_within_workspace_is_inside(backend: LocalBackend) -> None:
    (backend.root / "real").mkdir()
    (backend.root / "alias").symlink_to(backend.root / "real")
    assert backend.is_inside_workspace("alias/file.py")


def test_display_path(backend: LocalBackend) -> None:
    assert backend.display_path("src/../src/a.py") == "src/a.py"
    assert backend.display_path(str(backend.root / "b.py")) == "b.py"
    assert backend.display_path(".") == "."
    assert backend.display_path("/etc/hosts") == "/etc/hosts"
    assert backend.display_path("../x") == os.path.join(str(backend.root.parent), "x")


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("**/*.py", (".", "**/*.py")),
        ("src/**/*.py", ("src", "**/*.py")),
        ("src/lib/a.py", ("src/lib", "a.py")),
        ("/abs/dir/*.txt", ("/abs/dir", "*.txt")),
        ("/a.txt", ("/", "a.txt")),
        ("*.py", (".", "*.py")),
    ],
)
def test_split_glob_base(pattern: str, expected: tuple[str, str]) -> None:
    assert split_glob_base(pattern) == expected
