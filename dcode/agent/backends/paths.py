"""The one path rule: where a path the model wrote really leads, relative to a workspace root.

``resolve_path`` does the resolution the kernel does when it opens a path: ``~`` is expanded, a
relative path starts at the root, every symlink is followed and each ``..`` is applied to the
directory it is really in (so ``link/..`` is the link target's parent, not the directory holding
the link). Components that do not exist yet are kept as written, so a file about to be created
resolves too. The approval policy decides "inside the workspace" on this path, and the backend
opens this path, so the two cannot disagree: there is no second, lexical reading of ``..``.
"""

from __future__ import annotations

import os
from pathlib import Path

from dcode.agent.backends.globbing import has_magic


def resolve_path(root: Path, path: str | Path) -> Path:
    """The physical path ``path`` leads to; raises ``ValueError`` for a NUL byte, as ``open`` would."""
    expanded = Path(os.path.expanduser(os.fspath(path)))
    if not expanded.is_absolute():
        expanded = root / expanded
    return Path(os.path.realpath(expanded))


def is_inside(root: Path, resolved: Path) -> bool:
    """Whether ``resolved`` (from ``resolve_path``) lies under ``root``.

    The resolver leaves a symlink in its answer only when it cannot follow it (a loop); such a
    path is not provably inside, so it is not.
    """
    real_root = Path(os.path.realpath(root))
    if not resolved.is_relative_to(real_root):
        return False
    here = resolved
    while here != real_root:
        if os.path.islink(here):
            return False
        here = here.parent
    return True


def is_inside_workspace(root: Path, path: str | Path) -> bool:
    """The containment answer for a path as the model wrote it; unresolvable means outside."""
    try:
        return is_inside(root, resolve_path(root, path))
    except (OSError, ValueError):
        return False


def display_path(root: Path, path: str | Path) -> str:
    """Relative to the root when the path resolves inside it, else the resolved absolute path."""
    try:
        resolved = resolve_path(root, path)
    except ValueError:
        return os.fspath(path)
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
