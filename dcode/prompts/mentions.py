"""``@path`` in a prompt: which paths the text names (plain text only, nothing read or imported).

``@`` starts a mention where it starts a word (``me@host`` is not one); ``\\ `` escapes a space;
trailing punctuation (``see @main.py.``) is not part of the path. Whether a mention names a
file is for the reader to find out (``dcode.prompts.files``): ``@property`` is a word.
"""

from __future__ import annotations

import re
from pathlib import Path

_MENTION = re.compile(r"(?<![\w/])@((?:\\ |[^\s])+)")


def mentions(text: str) -> list[str]:
    """The paths ``text`` names as ``@path``, as written, each once, in order."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        raw = match.group(1).replace("\\ ", " ").rstrip(".,;:!?)]}\"'")
        if raw and raw not in found:
            found.append(raw)
    return found


def mentioned_path(raw: str, workspace: Path) -> Path:
    """The path a mention names: ``~`` expanded, relative to ``workspace`` unless absolute."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else workspace / path
