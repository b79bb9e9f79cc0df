"""``Read(…)`` and ``Edit(…)`` paths, in gitignore's pattern language, as Claude Code reads them.

``//abs/path`` is absolute, ``~/path`` is under the home directory, ``/path`` and ``./path`` are
under the project's root, and a pattern without a slash (``.env``, ``*.key``) matches that name
at any depth under the root. ``*`` matches within one directory, ``**`` across directories, and
a pattern that names a directory covers everything in it.

A call's path is matched both as written (made absolute, ``..`` applied) and as the kernel will
open it (every symlink followed, ``backends.paths.resolve_path``): a link to a denied file is
denied, and so is a denied name that is itself a link.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from dcode.agent.backends.paths import resolve_path


@dataclass(frozen=True, slots=True)
class PathPattern:
    base: Path
    regex: re.Pattern[str]
    anchored: bool
    """False: the pattern is one name, matched at any depth under ``base``."""

    def matches(self, path: Path) -> bool:
        if not path.is_relative_to(self.base):
            return False
        parts = path.relative_to(self.base).parts
        if self.anchored:
            return any(
                self.regex.fullmatch("/".join(parts[: end + 1])) for end in range(len(parts))
            )
        return any(self.regex.fullmatch(part) for part in parts)


@functools.lru_cache(maxsize=512)
def path_pattern(spec: str, workspace: Path, home: Path) -> PathPattern:
    """What ``Read(spec)`` or ``Edit(spec)`` covers, for a project rooted at ``workspace``."""
    text = spec.rstrip("/") or "/"
    if text.startswith("//"):
        base, rest, anchored = Path("/"), text[2:], True
    elif text == "~" or text.startswith("~/"):
        base, rest, anchored = home, text[2:], True
    elif text.startswith("/"):
        base, rest, anchored = workspace, text[1:], True
    elif text.startswith("./"):
        base, rest, anchored = workspace, text[2:], True
    else:
        base, rest, anchored = workspace, text, "/" in text
    rest = str(PurePosixPath(rest)) if rest else ""
    if rest in ("", "."):
        return PathPattern(_real(base), re.compile(r".*", re.DOTALL), True)
    return PathPattern(_real(base), re.compile(_glob_regex(rest), re.DOTALL), anchored)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _glob_regex(pattern: str) -> str:
    out, index = [], 0
    while index < len(pattern):
        if pattern.endswith("/**") and index == len(pattern) - 3:
            out.append("(?:/.*)?")  # the folder itself too: listing it shows what it holds
            index += 3
        elif pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return "".join(out)


def call_paths(workspace: Path, raw: str) -> tuple[Path, ...]:
    """``raw`` as written (absolute, ``..`` applied) and as it will be opened; none when it
    cannot name a file (a NUL byte)."""
    try:
        opened = resolve_path(workspace, raw)
    except (OSError, ValueError):
        return ()
    written = Path(
        os.path.normpath(workspace / os.path.expanduser(raw))
    )  # an absolute one replaces the root
    real_root = _real(workspace)
    if written.is_relative_to(workspace) and workspace != real_root:
        written = real_root / written.relative_to(workspace)
    return (written, opened) if written != opened else (opened,)
