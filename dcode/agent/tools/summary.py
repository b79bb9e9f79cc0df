"""One-line descriptions of tool calls and short previews of results, for the UI.

A call's line comes from its tool's spec (``ToolSpec.summary``), so a tool describes its own
calls; tools no spec knows get their arguments as ``key=value`` pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dcode.agent.tools.spec import MAX_SUMMARY_CHARS, spec_for

PREVIEW_LINE_CHARS = 120

__all__ = ["MAX_SUMMARY_CHARS", "preview_result", "summarize_call"]


def summarize_call(name: str, args: Mapping[str, Any]) -> str:
    return spec_for(name).summary(args)


def preview_result(text: str, lines: int = 3) -> str:
    """The first ``lines`` non-blank-edged lines of a result, with a count of the rest."""
    all_lines = text.strip("\n").splitlines()
    while all_lines and not all_lines[0].strip():
        all_lines.pop(0)
    shown = [
        _truncate(line.expandtabs(4).rstrip(), PREVIEW_LINE_CHARS) for line in all_lines[:lines]
    ]
    rest = len(all_lines) - len(shown)
    if rest > 0:
        shown.append(f"… (+{rest} more line{'s' if rest != 1 else ''})")
    return "\n".join(shown)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
