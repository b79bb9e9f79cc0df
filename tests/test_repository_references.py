"""The code speaks of the repository alone: every file its docstrings and comments cite exists here.

A path under one of the repository's top-level directories (``dcode/…``, ``tests/…``,
``scripts/…``) must exist; so must a cited project document (``DESIGN.md``, ``STYLE.md``,
``README.md``: an upper-case name ending in ``.md``) at the root. Documents that live outside the
repository (``../shared/…``, ``reference/…``, ``seeds/…``) cannot be cited at all: a reader of
the repository has no way to follow them. File names dcode reads at run time in the user's
project (``AGENTS.md``, ``CLAUDE.md``, ``SKILL.md``) are not references to repository files.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ROOT / "dcode"
OUTSIDE = ("shared", "reference", "seeds", "corpus")
RUNTIME_NAMES = frozenset({"AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "SKILL.md"})
SUFFIXES = frozenset({".py", ".tcss", ".md", ".sh", ".toml", ".txt", ".json"})

_TOP = "|".join(
    sorted(
        {
            entry.name
            for entry in ROOT.iterdir()
            if entry.is_dir() and not entry.name.startswith(".")
        }
        | set(OUTSIDE)
    )
)
# Not after a word, a dot or a slash: ``.dcode/config.toml`` and ``~/.agents/skills`` are the
# user's directories, not the repository's.
PATH = re.compile(rf"(?<![\w./~$-])((?:\.\./)*(?:{_TOP})/[\w./-]*\w)")
DOCUMENT = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9_-]*\.md)\b")


def sources() -> list[Path]:
    return sorted(
        path
        for path in SCANNED.rglob("*")
        if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts
    )


def dangling(text: str) -> list[str]:
    """The references in ``text`` that do not name a file or directory of the repository."""
    found = []
    for match in PATH.finditer(text):
        cited = match.group(1)
        if (
            cited.startswith("../")
            or cited.split("/", 1)[0] in OUTSIDE
            or not (ROOT / cited).exists()
        ):
            found.append(cited)
    found += [
        name
        for name in DOCUMENT.findall(text)
        if name not in RUNTIME_NAMES and not (ROOT / name).exists()
    ]
    return found


def test_the_scan_finds_what_it_should() -> None:
    assert dangling("see ``dcode/agent/graph.py`` and ``scripts/bench/images.py``") == []
    assert dangling("a project's ``.dcode/config.toml``, ``~/.agents/skills``, its AGENTS.md") == []
    assert dangling("see DESIGN.md, ``../shared/corpus/images``, ``reference/media-facts.md``") == [
        "../shared/corpus/images",
        "reference/media-facts.md",
        "DESIGN.md",
    ]
    assert dangling("``dcode/no_such_module.py`` and ``tests/test_nothing_here.py``") == [
        "dcode/no_such_module.py",
        "tests/test_nothing_here.py",
    ]


def test_every_cited_file_is_in_the_repository() -> None:
    files = sources()
    assert len(files) > 100
    cited = {
        str(path.relative_to(ROOT)): dangling(path.read_text(encoding="utf-8", errors="replace"))
        for path in files
    }
    assert {path: refs for path, refs in cited.items() if refs} == {}
