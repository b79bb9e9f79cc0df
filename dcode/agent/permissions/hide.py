"""Search results from files a ``Read`` deny rule guards are taken out before the model sees
them: ``grep`` over the workspace must not show what ``read_file`` on ``.env`` may not."""

from __future__ import annotations

import re
from collections.abc import Callable

_MATCH = re.compile(r"^(?P<path>.+?):(?P<line>\d+):")


def hide_denied_matches(text: str, denied: Callable[[str], bool]) -> str:
    """``text`` (grep's ``path:line:text`` lines) without the lines of denied files, and one
    line saying how many were hidden."""
    kept: list[str] = []
    hidden = 0
    for line in text.split("\n"):
        match = _MATCH.match(line)
        if match is not None and denied(match["path"]):
            hidden += 1
            continue
        kept.append(line)
    if hidden:
        kept.append(f"[{hidden} matching lines hidden: their files are denied by a Read rule]")
    return "\n".join(kept)
