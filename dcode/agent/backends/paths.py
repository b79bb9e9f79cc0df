"""Path arithmetic relative to a workspace root, shared by every backend.

Resolution is lexical (``..`` is folded without consulting the disk) so it works for files that
do not exist yet; only the containment check follows symlinks, because that is the one place a
link pointing out of the workspace changes the answer.
"""

from __future__ import annotations

import os
from pathlib import Path

from dcode.agent.backends.globbing import has_magic


def resolve_path(root: Path, path: str | Path) -> Path:
    expanded = Path(os.path.expanduser(os.fspath(path)))
    if not expanded.is_absolute():
        expanded = root / expanded
    return Path(os.path.normpath(expanded))


def is_inside(root: Path, path: str | Path) -> bool:
    """Whether ``path`` (already absolute) really lies under ``root`` once symlinks are resolved."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    return real.is_relative_to(real_root)


def display_path(root: Path, path: str | Path) -> str:
    resolved = resolve_path(root, path)
    if not resolved.is_relative_to(root):
        return str(resolved)
    rel = resolved.relative_to(root).as_posix()
    return rel or "."


def split_glob_base(pattern: str) -> tuple[str, str]:
    """``/abs/src/**/*.py`` → (``/abs/src``, ``**/*.py``): the literal directories lead the glob.

    Lets the model hand ``glob`` an absolute pattern and still get a fast, rooted search.
    """
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if has_magic(part):
            break
        literal.append(part)
    base = "/".join(literal) or ("/" if pattern.startswith("/") else ".")
    rest = "/".join(parts[len(literal) :])
    return base, rest
