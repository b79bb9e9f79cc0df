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


# -- the one path rule: what is judged is what is opened -----------------------------------


@pytest.fixture
def hostile(tmp_path: Path) -> LocalBackend:
    """A workspace whose links make a lexical reading of ``..`` and the kernel's disagree.

    ``outer/ws/deep -> a/b``: ``deep/../../x.txt`` is ``ws/x.txt`` to the kernel, ``outer/x.txt``
    when ``..`` is folded first. ``up -> ../elsewhere/sub``: ``up/../y.txt`` is outside to the
    kernel, ``ws/y.txt`` lexically. Both ``x.txt`` files exist, with different content.
    """
    outer = tmp_path / "outer"
    ws = outer / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (outer / "elsewhere" / "sub").mkdir(parents=True)
    (ws / "deep").symlink_to("a/b")
    (ws / "up").symlink_to("../elsewhere/sub")
    (ws / "x.txt").write_text("inside\n")
    (outer / "x.txt").write_text("outside\n")
    return LocalBackend(ws)


def test_dotdot_after_a_symlink_is_applied_where_the_link_leads(hostile: LocalBackend) -> None:
    assert hostile.resolve("deep/../../x.txt") == hostile.root / "x.txt"
    assert hostile.is_inside_workspace("deep/../../x.txt")
    assert hostile.resolve("deep/../../new/file.txt") == hostile.root / "new" / "file.txt"


def test_dotdot_after_a_link_out_is_outside(hostile: LocalBackend) -> None:
    elsewhere = hostile.root.parent / "elsewhere"
    assert hostile.resolve("up/../y.txt") == elsewhere / "y.txt"
    assert not hostile.is_inside_workspace("up/../y.txt")


def test_symlink_chains_are_followed_to_the_end(hostile: LocalBackend, tmp_path: Path) -> None:
    root = hostile.root
    (root / "c3").symlink_to(tmp_path / "far")
    (root / "c2").symlink_to("c3")
    (root / "c1").symlink_to("c2")
    assert hostile.resolve("c1/f") == tmp_path / "far" / "f"
    assert not hostile.is_inside_workspace("c1/f")
    (root / "i2").symlink_to("a")
    (root / "i1").symlink_to("i2")
    assert hostile.resolve("i1/b/f") == root / "a" / "b" / "f"
    assert hostile.is_inside_workspace("i1/b/f")


def test_dangling_symlinks_resolve_to_their_target(hostile: LocalBackend, tmp_path: Path) -> None:
    root = hostile.root
    (root / "dangling_out").symlink_to(tmp_path / "missing.txt")
    (root / "dangling_in").symlink_to("not_yet.txt")
    assert hostile.resolve("dangling_out") == tmp_path / "missing.txt"
    assert not hostile.is_inside_workspace("dangling_out")
    assert hostile.resolve("dangling_in") == root / "not_yet.txt"
    assert hostile.is_inside_workspace("dangling_in")


def test_a_symlink_loop_is_not_inside(hostile: LocalBackend) -> None:
    (hostile.root / "loop1").symlink_to("loop2")
    (hostile.root / "loop2").symlink_to("loop1")
    assert not hostile.is_inside_workspace("loop1/x")


def test_tilde_inside_and_outside(hostile: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(hostile.root / "deep"))
    assert hostile.resolve("~/../../x.txt") == hostile.root / "x.txt"
    assert hostile.is_inside_workspace("~/../../x.txt")
    monkeypatch.setenv("HOME", str(hostile.root / "up"))
    assert not hostile.is_inside_workspace("~/file")


def test_absolute_paths_through_links(hostile: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "alias_of_ws").symlink_to(hostile.root)
    assert hostile.is_inside_workspace(
        str(tmp_path / "alias_of_ws" / "deep" / ".." / ".." / "x.txt")
    )
    assert hostile.resolve(str(tmp_path / "alias_of_ws" / "x.txt")) == hostile.root / "x.txt"
    assert not hostile.is_inside_workspace(str(hostile.root / "up" / "z"))


def test_a_nul_byte_is_outside_and_still_displays(hostile: LocalBackend) -> None:
    assert not hostile.is_inside_workspace("bad\0name")
    assert hostile.display_path("bad\0name") == "bad\0name"


async def test_every_operation_opens_the_resolved_path(hostile: LocalBackend) -> None:
    """``deep/../..`` is the workspace for every operation that takes a path, as it was judged."""
    escape = "deep/../.."
    assert await hostile.read_text(f"{escape}/x.txt") == "inside\n"
    assert await hostile.exists(f"{escape}/x.txt")
    assert (await hostile.stat(f"{escape}/x.txt")).path == hostile.root / "x.txt"
    assert (
        "x.txt" in (await hostile.ls(escape)).items
        and "ws/" not in (await hostile.ls(escape)).items
    )
    assert (await hostile.glob("*.txt", escape)).items == ("x.txt",)
    assert (await hostile.glob(f"{escape}/*.txt")).items == ("x.txt",)
    matches = (await hostile.grep("side", escape)).matches
    assert [(m.path, m.text) for m in matches] == [("x.txt", "inside")]
    assert (await hostile.execute("pwd", cwd=escape)).output.strip() == str(hostile.root)
    await hostile.write_text(f"{escape}/x.txt", "changed\n")
    assert (hostile.root / "x.txt").read_text() == "changed\n"
    assert (hostile.root.parent / "x.txt").read_text() == "outside\n"


@pytest.mark.parametrize("use_ripgrep", [True, False], ids=["ripgrep", "python"])
async def test_search_through_a_link_out_reads_where_it_leads(
    hostile: LocalBackend, use_ripgrep: bool
) -> None:
    backend = LocalBackend(hostile.root, use_ripgrep=use_ripgrep, use_git=False)
    (hostile.root.parent / "elsewhere" / "found.txt").write_text("needle\n")
    assert not backend.is_inside_workspace("up/..")
    matches = (await backend.grep("needle", "up/..")).matches
    assert [m.text for m in matches] == ["needle"]
    assert matches[0].path == str(hostile.root.parent / "elsewhere" / "found.txt")
