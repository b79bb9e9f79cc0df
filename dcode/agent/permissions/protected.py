"""The files that say what dcode (or Claude Code) may do: its settings, hooks, agents and
commands. A write to one always asks, in every mode and under any allow rule, so the model
cannot widen its own permissions; a sandbox mounts them read-only for the same reason.

``is_protected_path`` takes a path as the kernel will open it (``backends.paths.resolve_path``);
standard library only, so that whatever builds a sandbox can import it cheaply.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PROJECT_DIRS: tuple[str, ...] = (".dcode", ".claude")
"""Directories whose every file is protected, wherever they sit (a project's, the user's)."""
USER_FILES: tuple[str, ...] = (
    "config.toml",
    "preferences.json",
    "permissions",
    "trusted_projects.json",
    "mcp.json",
    "agents",
    "commands",
    "skills",
    "hooks",
)
"""What, under ``$DCODE_HOME``, decides what dcode may do."""


def _home(env: Mapping[str, str] | None) -> Path:
    env = os.environ if env is None else env
    raw = env.get("DCODE_HOME")
    return Path(os.path.realpath(Path(raw).expanduser() if raw else Path.home() / ".dcode"))


def protected_roots(env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The user's protected files and folders (a project's are any ``.dcode`` or ``.claude``)."""
    home = _home(env)
    claude = Path(os.path.realpath(Path.home() / ".claude"))
    return (*(home / name for name in USER_FILES), claude)


def is_protected_path(path: str | Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether writing ``path`` (resolved, absolute) could change dcode's or Claude's settings,
    hooks, agents or commands: inside any ``.dcode/`` or ``.claude/`` directory, or one of the
    user's own files under ``$DCODE_HOME``."""
    resolved = Path(path)
    if any(part in PROJECT_DIRS for part in resolved.parts):
        return True
    return any(resolved == root or resolved.is_relative_to(root) for root in protected_roots(env))
