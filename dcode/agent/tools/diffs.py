"""What a write would change, as a unified diff, computed without writing.

Approval prompts show it so a person can judge an edit before it lands, and the transcript
shows it afterwards. It reuses ``apply_edit`` so the preview is exactly what edit_file will do.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools import names
from dcode.agent.tools.editing import EditError, apply_edit

CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file\n"


async def proposed_diff(backend: Backend, name: str, args: Mapping[str, Any]) -> str:
    """The diff ``name(**args)`` would apply; ``""`` for other tools or when it cannot apply."""
    try:
        match name:
            case names.WRITE_FILE:
                return await _write_diff(backend, args)
            case names.EDIT_FILE:
                return await _edit_diff(backend, args)
            case _:
                return ""
    except (OSError, UnicodeDecodeError, EditError, KeyError, TypeError, ValueError):
        return ""


async def _write_diff(backend: Backend, args: Mapping[str, Any]) -> str:
    path, content = str(args["file_path"]), args["content"]
    if not isinstance(content, str):
        return ""
    old = await backend.read_text(path) if await backend.exists(path) else None
    return unified_diff(old, content, backend.display_path(path))


async def _edit_diff(backend: Backend, args: Mapping[str, Any]) -> str:
    path = str(args["file_path"])
    old_string, new_string = args["old_string"], args["new_string"]
    if not isinstance(old_string, str) or not isinstance(new_string, str):
        return ""
    old = await backend.read_text(path)
    outcome = apply_edit(old, old_string, new_string, replace_all=args.get("replace_all") is True)
    return unified_diff(old, outcome.text, backend.display_path(path))


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
