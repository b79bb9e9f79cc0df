"""Where a session's files beside the database live, named once: the archive of its compacted
conversation (``{session}.md``) and its last plan (``{session}.plan.md``), each subagent's
(``{session}-task-N.md``) beside them, under ``$DCODE_HOME/conversation_history``.

Deleting a session deletes these too: they hold the conversation's whole text.
"""

from __future__ import annotations

from pathlib import Path

HISTORY_DIR = "conversation_history"
PLAN_SUFFIX = ".plan.md"


def file_stem(session_id: str) -> str:
    """A session id as a file name: a subagent's ``parent/task-1`` is ``parent-task-1``."""
    return "-".join(session_id.split("/"))


def archive_path(history_dir: Path, session_id: str) -> Path:
    return history_dir / f"{file_stem(session_id)}.md"


def plan_path(history_dir: Path, session_id: str) -> Path:
    return history_dir / f"{file_stem(session_id)}{PLAN_SUFFIX}"


def delete_session_files(home: Path, session_id: str) -> list[Path]:
    """Remove the session's archive and plan, and its subagents' archives; the paths removed."""
    history_dir = home / HISTORY_DIR
    stem = file_stem(session_id)
    found = [archive_path(history_dir, session_id), plan_path(history_dir, session_id)]
    if history_dir.is_dir():
        found += sorted(history_dir.glob(f"{stem}-task-*.md"))
    removed = []
    for path in found:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed
