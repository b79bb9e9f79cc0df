"""glob and grep of the local backend, with every search engine it can use.

``ripgrep`` runs only where ``rg`` is installed; ``git`` and ``walk`` are the pure-Python
fallbacks (git listing inside a work tree, our own .gitignore matcher outside or without git).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dcode.agent.backends import InvalidPattern, LocalBackend

HAS_RG = shutil.which("rg") is not None
HAS_GIT = shutil.which("git") is not None

ENGINES = [
    pytest.param("ripgrep", marks=pytest.mark.skipif(not HAS_RG, reason="rg not installed")),
    "python",
]


def make_backend(root: Path, engine: str, *, use_git: bool = True) -> LocalBackend:
    backend = LocalBackend(root, use_ripgrep=engine == "ripgrep", use_git=use_git)
    assert backend.search_engine == engine
    return backend


def write(root: Path, rel: str, content: str | bytes = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root, ".gitignore", "node_modules/\n*.log\n/build\n")
    write(root, "src/app.py", "import os\nTODO = 'first'\n")
    write(root, "src/pkg/util.py", "def helper():\n    return 'TODO later'\n")
    write(root, "src/pkg/.gitignore", "generated.py\n")
    write(root, "src/pkg/generated.py", "TODO generated\n")
    write(root, "node_modules/dep/index.js", "TODO in dep\n")
    write(root, "debug.log", "TODO in log\n")
    write(root, "build/out.py", "TODO built\n")
    write(root, "pkg/build/kept.py", "TODO kept\n")  # /build is anchored at the root
    write(root, ".github/ci.yml", "# TODO hidden but not ignored\n")
    write(root, "image.bin", b"TODO\x00\x01\x02binary")
    write(root, "README.md", "Nothing to do here\n")
    return root


SEARCHABLE = [".github/ci.yml", "pkg/build/kept.py", "src/app.py", "src/pkg/util.py"]


def modes() -> list[tuple[str, bool, bool]]:
    """(engine, in_git_repo, use_git) combinations to cover."""
    combos = [("python", False, True)]
    if HAS_GIT:
        combos += [("python", True, True), ("python", True, False)]
    if HAS_RG:
        combos += [("ripgrep", False, True)]
        if HAS_GIT:
            combos += [("ripgrep", True, True)]
    return combos


@pytest.mark.parametrize(("engine", "in_git", "use_git"), modes())
async def test_grep_respects_gitignore_and_skips_binary(
    tree: Path, engine: str, in_git: bool, use_git: bool
) -> None:
    if in_git:
        git_init(tree)
    backend = make_backend(tree, engine, use_git=use_git)
    result = await backend.grep("TODO")
    assert sorted({m.path for m in result.matches}) == SEARCHABLE
    assert not result.truncated
    assert all(".git/" not in m.path for m in result.matches)


@pytest.mark.parametrize(("engine", "in_git", "use_git"), modes())
async def test_glob_respects_gitignore(
    tree: Path, engine: str, in_git: bool, use_git: bool
) -> None:
    if in_git:
        git_init(tree)
    backend = make_backend(tree, engine, use_git=use_git)
    listing = await backend.glob("**/*.py")
    assert sorted(listing.items) == ["pkg/build/kept.py", "src/app.py", "src/pkg/util.py"]
    everything = await backend.glob("**")
    assert ".github/ci.yml" in everything.items
    assert not any(item.startswith(".git/") for item in everything.items)
    assert "debug.log" not in everything.items


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_output_format_and_line_numbers(tree: Path, engine: str) -> None:
    backend = make_backend(tree, engine)
    result = await backend.grep("TODO", "src/app.py")
    assert [m.format() for m in result.matches] == ["src/app.py:2:TODO = 'first'"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_in_subdirectory_keeps_workspace_relative_paths(tree: Path, engine: str) -> None:
    backend = make_backend(tree, engine)
    result = await backend.grep(r"return\s+'", "src/pkg")
    assert [m.format() for m in result.matches] == ["src/pkg/util.py:2:    return 'TODO later'"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_glob_filter(tree: Path, engine: str) -> None:
    backend = make_backend(tree, engine)
    only_py = await backend.grep("TODO", glob="*.py")
    assert {m.path for m in only_py.matches} == {
        "pkg/build/kept.py",
        "src/app.py",
        "src/pkg/util.py",
    }
    anchored = await backend.grep("TODO", glob="src/**/*.py")
    assert {m.path for m in anchored.matches} == {"src/app.py", "src/pkg/util.py"}
    relative = await backend.grep("TODO", "src", glob="pkg/*.py")
    assert {m.path for m in relative.matches} == {"src/pkg/util.py"}
    excluded = await backend.grep("TODO", glob="!*.py")
    assert {m.path for m in excluded.matches} == {".github/ci.yml"}
    braces = await backend.grep("TODO", glob="*.{yml,md}")
    assert {m.path for m in braces.matches} == {".github/ci.yml"}


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_caps_matches(tmp_path: Path, engine: str) -> None:
    write(tmp_path, "many.txt", "hit\n" * 50)
    write(tmp_path, "more.txt", "hit\n" * 50)
    backend = make_backend(tmp_path, engine)
    result = await backend.grep("hit", max_matches=60)
    assert len(result.matches) == 60
    assert result.truncated
    exact = await backend.grep("hit", "many.txt", max_matches=50)
    assert len(exact.matches) == 50 and not exact.truncated


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_clips_long_lines(tmp_path: Path, engine: str) -> None:
    write(tmp_path, "min.js", "x" * 5000 + "needle" + "y" * 5000 + "\n")
    backend = make_backend(tmp_path, engine)
    result = await backend.grep("needle")
    assert len(result.matches) == 1
    assert len(result.matches[0].text) < 600
    assert "more chars" in result.matches[0].text


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_skips_binary_even_with_late_nul(tmp_path: Path, engine: str) -> None:
    write(tmp_path, "late.bin", b"needle\n" + b"a" * 200_000 + b"\x00\n")
    write(tmp_path, "text.txt", "needle\n")
    backend = make_backend(tmp_path, engine)
    result = await backend.grep("needle")
    assert [m.path for m in result.matches] == ["text.txt"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_crlf_lines_are_clean(tmp_path: Path, engine: str) -> None:
    write(tmp_path, "dos.txt", b"one\r\nneedle here\r\n")
    backend = make_backend(tmp_path, engine)
    result = await backend.grep("needle")
    assert [m.format() for m in result.matches] == ["dos.txt:2:needle here"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_invalid_regex(tmp_path: Path, engine: str) -> None:
    write(tmp_path, "a.txt", "x\n")
    backend = make_backend(tmp_path, engine)
    with pytest.raises(InvalidPattern):
        await backend.grep("foo(")


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_missing_path(tmp_path: Path, engine: str) -> None:
    backend = make_backend(tmp_path, engine)
    with pytest.raises(FileNotFoundError):
        await backend.grep("x", "nope")


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_explicitly_named_ignored_directory_is_searched(tree: Path, engine: str) -> None:
    backend = make_backend(tree, engine)
    result = await backend.grep("TODO", "node_modules")
    assert [m.path for m in result.matches] == ["node_modules/dep/index.js"]


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
async def test_git_listing_of_ignored_directory_falls_back_to_walk(tree: Path) -> None:
    git_init(tree)
    backend = make_backend(tree, "python")
    result = await backend.grep("TODO", "node_modules")
    assert [m.path for m in result.matches] == ["node_modules/dep/index.js"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_sorted_newest_first_and_capped(tmp_path: Path, engine: str) -> None:
    for index, name in enumerate(["old.py", "mid.py", "new.py"]):
        path = write(tmp_path, f"d/{name}", "")
        os.utime(path, (1_000_000 + index * 100, 1_000_000 + index * 100))
    backend = make_backend(tmp_path, engine)
    listing = await backend.glob("**/*.py")
    assert listing.items == ("d/new.py", "d/mid.py", "d/old.py")
    capped = await backend.glob("**/*.py", max_results=2)
    assert capped.items == ("d/new.py", "d/mid.py") and capped.total == 3 and capped.truncated


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_relative_to_path_and_non_recursive_star(tree: Path, engine: str) -> None:
    backend = make_backend(tree, engine)
    assert (await backend.glob("*.py", "src")).items == ("src/app.py",)
    assert sorted((await backend.glob("**/*.py", "src")).items) == ["src/app.py", "src/pkg/util.py"]
    assert (await backend.glob("pkg/*.py", "src")).items == ("src/pkg/util.py",)
    assert (await backend.glob("*.md")).items == ("README.md",)


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_absolute_and_literal_patterns(tree: Path, engine: str) -> None:
    backend = make_backend(tree, engine)
    assert (await backend.glob(f"{tree}/src/*.py")).items == ("src/app.py",)
    assert (await backend.glob("src/app.py")).items == ("src/app.py",)
    assert (await backend.glob("src/missing.py")).items == ()
    assert (await backend.glob("nowhere/**/*.py")).items == ()


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_errors(tree: Path, engine: str) -> None:
    backend = make_backend(tree, engine)
    with pytest.raises(FileNotFoundError):
        await backend.glob("*.py", "missing")
    with pytest.raises(NotADirectoryError):
        await backend.glob("*.py", "README.md")


async def test_walk_reads_info_exclude_and_skips_nested_git_dirs(tmp_path: Path) -> None:
    write(tmp_path, ".git/info/exclude", "secret.txt\n")
    write(tmp_path, ".git/config", "needle\n")
    write(tmp_path, "secret.txt", "needle\n")
    write(tmp_path, "vendor/lib/.git/HEAD", "needle\n")
    write(tmp_path, "vendor/lib/a.txt", "needle\n")
    backend = make_backend(tmp_path, "python", use_git=False)
    result = await backend.grep("needle")
    assert [m.path for m in result.matches] == ["vendor/lib/a.txt"]
