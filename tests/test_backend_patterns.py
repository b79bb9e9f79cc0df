"""The glob translator and the .gitignore matcher."""

from __future__ import annotations

import pytest

from dcode.agent.backends.gitignore import IgnoreMatcher, PathFilter, parse_ignore_file
from dcode.agent.backends.globbing import compile_glob, expand_braces


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("**/*.py", "src/a.pyc", False),
        ("src/**", "src/a/b.txt", True),
        ("src/**", "srcx/a", False),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("[ab].txt", "a.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("*.{ts,tsx}", "x.tsx", True),
        ("*.{ts,tsx}", "x.js", False),
        ("{src,lib}/**/*.{js,mjs}", "lib/a/b.mjs", True),
        ("file[1", "file[1", True),
        ("\\*.md", "*.md", True),
        ("\\*.md", "a.md", False),
        ("*", ".hidden", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_compile_glob(pattern: str, path: str, hit: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is hit


def test_expand_braces() -> None:
    assert sorted(expand_braces("a.{x,{y,z}}")) == ["a.x", "a.y", "a.z"]
    assert expand_braces("no{brace}") == ["no{brace}"]
    assert expand_braces("plain") == ["plain"]


def _matcher(text: str, base: str = "") -> IgnoreMatcher:
    return IgnoreMatcher().with_rules(base, parse_ignore_file(text))


def test_basename_patterns_match_at_any_depth() -> None:
    m = _matcher("*.log\nbuild\n")
    assert m.is_ignored("x.log", is_dir=False)
    assert m.is_ignored("a/b/x.log", is_dir=False)
    assert m.is_ignored("build", is_dir=True)
    assert m.is_ignored("pkg/build", is_dir=False)
    assert not m.is_ignored("builder", is_dir=True)


def test_anchored_patterns() -> None:
    m = _matcher("/dist\ndocs/*.html\n")
    assert m.is_ignored("dist", is_dir=True)
    assert not m.is_ignored("pkg/dist", is_dir=True)
    assert m.is_ignored("docs/index.html", is_dir=False)
    assert not m.is_ignored("other/docs/index.html", is_dir=False)
    assert not m.is_ignored("docs/sub/index.html", is_dir=False)


def test_directory_only_patterns() -> None:
    m = _matcher("cache/\n")
    assert m.is_ignored("cache", is_dir=True)
    assert m.is_ignored("a/cache", is_dir=True)
    assert not m.is_ignored("cache", is_dir=False)


def test_negation_and_last_match_wins() -> None:
    m = _matcher("*.txt\n!keep.txt\n")
    assert m.is_ignored("a.txt", is_dir=False)
    assert not m.is_ignored("keep.txt", is_dir=False)
    assert not m.is_ignored("d/keep.txt", is_dir=False)


def test_double_star_patterns() -> None:
    m = _matcher("**/gen/**\nlogs/**/debug.log\n")
    assert m.is_ignored("gen/a.c", is_dir=False)
    assert m.is_ignored("x/gen/a/b.c", is_dir=False)
    assert m.is_ignored("logs/debug.log", is_dir=False)
    assert m.is_ignored("logs/a/b/debug.log", is_dir=False)


def test_comments_blanks_escapes_and_trailing_spaces() -> None:
    m = _matcher("# comment\n\n\\#hash\n\\!bang\ntrail   \nspace\\ \n")
    assert not m.is_ignored("# comment", is_dir=False)
    assert m.is_ignored("#hash", is_dir=False)
    assert m.is_ignored("!bang", is_dir=False)
    assert m.is_ignored("trail", is_dir=False)
    assert m.is_ignored("space ", is_dir=False)


def test_nested_ignore_files_apply_to_their_subtree_and_override() -> None:
    m = _matcher("*.tmp\n").with_rules("sub", parse_ignore_file("!keep.tmp\nlocal.txt\n"))
    assert m.is_ignored("a.tmp", is_dir=False)
    assert not m.is_ignored("sub/keep.tmp", is_dir=False)
    assert m.is_ignored("sub/local.txt", is_dir=False)
    assert not m.is_ignored("local.txt", is_dir=False)
    assert not m.is_ignored("subway/local.txt", is_dir=False)


def test_path_filter() -> None:
    py = PathFilter.parse("*.py")
    assert py is not None and py.keeps("a/b/c.py") and not py.keeps("c.js")
    anchored = PathFilter.parse("src/**/*.ts")
    assert (
        anchored is not None and anchored.keeps("src/a/b.ts") and not anchored.keeps("x/src/b.ts")
    )
    excluded = PathFilter.parse("!*.min.js")
    assert excluded is not None and excluded.keeps("a.js") and not excluded.keeps("a.min.js")
    braces = PathFilter.parse("*.{js,ts}")
    assert braces is not None and braces.keeps("x/y.ts")
