"""The unified diff of a write, from the file's text before it and the call's arguments.

Pure, so that one function serves the approval (before the write, from the disk) and the
finished call (from the text the tool read and replaced): both show the same headers and
hunks. The edit preview reuses ``apply_edit``, so it is exactly what edit_file does.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from dcode.agent.tools.editing import apply_edit

CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file\n"


def write_diff(args: Mapping[str, object], before: str | None, shown: str) -> str:
    """``before`` is ``None`` when the file does not exist yet."""
    content = args["content"]
    if not isinstance(content, str):
        raise TypeError("content is not text")
    return unified_diff(before, content, shown)


def edit_diff(args: Mapping[str, object], before: str | None, shown: str) -> str:
    old_string, new_string = args["old_string"], args["new_string"]
    if before is None or not isinstance(old_string, str) or not isinstance(new_string, str):
        raise ValueError("nothing to edit")
    outcome = apply_edit(
        before, old_string, new_string, replace_all=args.get("replace_all") is True
    )
    return unified_diff(before, outcome.text, shown)


def unified_diff(old: str | None, new: str, shown: str) -> str:
    """Git-style headers (``a/`` and ``b/``, ``/dev/null`` for a new file)."""
    prefix_a, prefix_b = ("", "") if shown.startswith("/") else ("a/", "b/")
    from_name = "/dev/null" if old is None else f"{prefix_a}{shown}"
    lines = difflib.unified_diff(
        _lines(old or ""), _lines(new), from_name, f"{prefix_b}{shown}", n=CONTEXT_LINES
    )
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
            continue
        out.extend((line + "\n", NO_NEWLINE))
    return "".join(out)


def _lines(text: str) -> list[str]:
    """Split after each ``\\n`` only (``splitlines`` would also split on form feeds and such)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
