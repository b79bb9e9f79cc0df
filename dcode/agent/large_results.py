"""Text too large for the conversation, written to a private file and shown as a preview.

Both ways a large text leaves the context go through here: a tool result evicted as it enters
the history (``middleware.result_eviction``) or clipped after an overflow
(``middleware.overflow_clip``), and a huge user paste (``paste_archive``). The preview is the
reference's: every line cut to ``PREVIEW_LINE_CHARS``; up to ten lines shown whole, numbered;
beyond that the first and last ``PREVIEW_LINES``, numbered from their real positions, around
a count of the lines left out.

Tool results go to ``$DCODE_HOME/large_tool_results/{session}/{tool_call_id}`` (the id made safe
as a file name): per session, because tool-call ids are only unique within a thread.
"""

from __future__ import annotations

import re
from pathlib import Path

from dcode.settings.private_files import write_private

RESULTS_DIR = "large_tool_results"
PREVIEW_LINES = 5
PREVIEW_LINE_CHARS = 1_000

_UNSAFE = re.compile(r"[./\\]")


def safe_name(name: str, default: str = "result") -> str:
    """``name`` as one path component: ``.``, ``/`` and ``\\`` become ``_``."""
    return _UNSAFE.sub("_", name) or default


def preview(text: str) -> str:
    """The text's lines, numbered from 1 and each cut to ``PREVIEW_LINE_CHARS``; beyond ten
    lines, the first and last ``PREVIEW_LINES`` around a count of those left out."""
    lines = text.splitlines()

    def numbered(start: int, chunk: list[str]) -> list[str]:
        return [
            f"{start + offset:6}\t{line[:PREVIEW_LINE_CHARS]}" for offset, line in enumerate(chunk)
        ]

    if len(lines) <= 2 * PREVIEW_LINES:
        return "\n".join(numbered(1, lines))
    left_out = len(lines) - 2 * PREVIEW_LINES
    head = numbered(1, lines[:PREVIEW_LINES])
    tail = numbered(len(lines) - PREVIEW_LINES + 1, lines[-PREVIEW_LINES:])
    return "\n".join([*head, f"... [{left_out} lines truncated] ...", *tail])


def result_path(root: Path, session_id: str, tool_call_id: str) -> Path:
    """Where the full text of ``tool_call_id``'s result in ``session_id`` is kept."""
    return root / safe_name(session_id, "session") / safe_name(tool_call_id)


def save_text(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` (0600, in 0700 directories); False when it could not be written,
    and then the caller keeps the text where it was."""
    try:
        write_private(path, text)
    except OSError:
        return False
    return True


def saved_note(headline: str, text: str, path: Path) -> str:
    """What stands in for ``text``, saved to ``path``: ``headline`` with its size, where the whole
    text is, how to read it, and the preview."""
    return (
        f"{headline} ({len(text):,} chars, {len(text.splitlines()):,} lines). The full text was saved to {path}: "
        f"read it with read_file (file_path={path}) and its offset and limit to get the parts you need. A preview:\n"
        + preview(text)
    )


def result_note(text: str, tool_call_id: str, path: Path, why: str) -> str:
    """What the model gets instead of a tool result saved to ``path``; ``why`` follows "too
    large" ("for the context window")."""
    return saved_note(f"Tool result too large {why} (call {tool_call_id})", text, path)
