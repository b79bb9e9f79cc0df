"""Rendering the diffs of file edits. The UI never computes one: the core does, with the tool
spec's preview, for the approval (``ApprovalRequested.diff``) and for the finished call
(``ToolCallFinished.diff``, saved with the session), so both always show the same diff.

Colours come from theme variables only, so every theme shows additions and removals its way.
"""

from __future__ import annotations

from textual.content import Content

from dcode.terminal_text import safe_text


def render_diff(diff: str, max_lines: int | None = None) -> Content:
    lines = safe_text(diff).splitlines()  # the lines of a file, which may hold anything
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
        rendered.append(
            Content.styled(f"… {hidden} more lines (ctrl+o to expand)", "$text-muted italic")
        )
    return Content("\n").join(rendered)


def diff_stats(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed
