"""A saved session's messages, read straight from its latest checkpoint.

Painting a resumed transcript needs only the thread's messages, while the engine (langchain,
the model client, the graph) takes a second or more to import. LangGraph's SQLite
checkpointer on its own loads in a fraction of that, so the transcript of a resumed session
can be on screen while the engine is still loading. The engine stays the authority: once it
is open, the thread's latest checkpoint id says whether what was painted is still current.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_LATEST = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"


@dataclass(frozen=True)
class SavedThread:
    checkpoint_id: str
    messages: list[Any]


def _read_only(db_path: Path) -> sqlite3.Connection | None:
    if not db_path.is_file():
        return None
    try:
        return sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=1, check_same_thread=False)
    except sqlite3.Error:
        return None


def read_saved_thread(db_path: Path, session_id: str) -> SavedThread | None:
    """The messages in ``session_id``'s latest checkpoint, as the graph's state holds them,
    and that checkpoint's id; None when there is no such database, session or checkpoint, or
    it cannot be read. The database is opened read-only."""
    conn = _read_only(db_path)
    if conn is None:
        return None
    from langgraph.checkpoint.sqlite import SqliteSaver

    try:
        saved = SqliteSaver(conn).get_tuple({"configurable": {"thread_id": session_id, "checkpoint_ns": ""}})
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if saved is None:
        return None
    messages = saved.checkpoint.get("channel_values", {}).get("messages")
    if not isinstance(messages, list):
        return None
    return SavedThread(str(saved.config["configurable"]["checkpoint_id"]), list(messages))


def latest_checkpoint_id(db_path: Path, session_id: str) -> str | None:
    """The id of ``session_id``'s latest checkpoint (ids grow with time), read without
    reviving the checkpoint itself; None when there is none or it cannot be read."""
    conn = _read_only(db_path)
    if conn is None:
        return None
    try:
        row = conn.execute(_LATEST, (session_id,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return str(row[0]) if row else None
