"""Diffs for file edits: taken from the approval when the core computed one, else from the args.

Colours come from theme variables only, so every theme shows additions and removals its way.
"""

from __future__ import annotations

import difflib
from typing import Any

from textual.content import Content

EDIT_TOOLS = frozenset({"write_file", "edit_file"})


def diff_from_args(name: str, args: dict[str, Any] | None) -> str:
    """A unified diff of what an edit call changes, rendered from its arguments alone."""
    if not args or name not in EDIT_TOOLS:
        return ""
    path = str(args.get("file_path") or args.get("path") or "file")
    if name == "edit_file":
        old = str(args.get("old_string") or "").splitlines()
        new = str(args.get("new_string") or "").splitlines()
    else:
        old, new = [], str(args.get("content") or "").splitlines()
    lines = difflib.unified_diff(old, new, fromfile=f"a/{path}", tofile=f"b/{path}", lineterm="", n=2)
    return "\n".join(lines)


def render_diff(diff: str, max_lines: int | None = None) -> Content:
    lines = diff.splitlines()
    hidden = 0
    if max_lines is not None and len(lines) > max_lines:
        hidden = len(lines) - max_lines
        lines = lines[:max_lines]
    rendered: list[Content] = []
    for line in lines:
        if line.startswith(("+++", "---")):
            rendered.append(Content.styled(line, "$text-muted"))
        elif line.startswith("+"):
            rendered.append(Content.styled(line, "$text-success on $success-muted"))
        elif line.startswith("-"):
            rendered.append(Content.styled(line, "$text-error on $error-muted"))
        elif line.startswith("@@"):
            rendered.append(Content.styled(line, "$text-accent"))
        else:
            rendered.append(Content(line))
    if hidden:
        rendered.append(Content.styled(f"… {hidden} more lines (ctrl+o to expand)", "$text-muted italic"))
    return Content("\n").join(rendered)


def diff_stats(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed
