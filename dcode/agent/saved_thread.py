"""A saved thread, read straight from LangGraph's SQLite checkpoints: the one module that knows
how they are stored.

Painting a resumed transcript needs only the thread's messages, while the engine (langchain,
the model client, the graph) takes a second or more to import. LangGraph's SQLite
checkpointer on its own loads in a fraction of that, so the transcript of a resumed session
can be on screen while the engine is still loading. The engine stays the authority: once it
is open, the thread's latest checkpoint id says whether what was painted is still current.

``replay`` turns the messages into the events the live stream gives, through the live stream's
own translator, so the TUI and ``dcode sessions show`` render a saved thread as they render a
turn. Everything here opens the database read-only, except ``delete_thread``.

The tables and columns used here are ``CHECKPOINT_SCHEMA``; ``tests/test_saved_thread.py`` pins
them against the installed ``langgraph-checkpoint-sqlite``, so an upgrade that changes them
fails there rather than in a user's resume.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dcode.agent.events import Event

CHECKPOINT_SCHEMA: dict[str, tuple[str, ...]] = {
    "checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id"),
    "writes": ("thread_id",),
}
_LATEST = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"


@dataclass(frozen=True)
class SavedThread:
    checkpoint_id: str
    messages: list[Any]


def open_read_only(db_path: Path) -> sqlite3.Connection | None:
    """A read-only connection to ``db_path``; None when there is no such file or it cannot be
    opened. Nothing read through it can change the file."""
    if not db_path.is_file():
        return None
    try:
        return sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=1, check_same_thread=False)
    except sqlite3.Error:
        return None


def read_saved_thread(db_path: Path, session_id: str, *, strict: bool = False) -> SavedThread | None:
    """The messages in ``session_id``'s latest checkpoint, as the graph's state holds them,
    and that checkpoint's id; None when there is no such database, session or checkpoint, or
    it cannot be read. ``strict``: a database that cannot be read raises
    ``SessionDatabaseError`` instead (``sessions show`` must not pass damage off as an empty
    session; the TUI's early paint just waits for the engine)."""
    from dcode.agent.sessions import SessionDatabaseError, database_errors

    conn = open_read_only(db_path)
    if conn is None:
        return None
    from langgraph.checkpoint.sqlite import SqliteSaver

    from dcode.agent.history_channel import thread_messages

    try:
        with database_errors(db_path):
            missing = _missing_tables(conn)
            if len(missing) == len(CHECKPOINT_SCHEMA):
                return None  # no checkpoint was ever saved here
            if missing:  # half the checkpointer's tables: the saver would try to recreate them
                raise SessionDatabaseError(db_path, f"no {' or '.join(missing)} table", damaged=True)
            saver = SqliteSaver(conn)
            saved = saver.get_tuple({"configurable": {"thread_id": session_id, "checkpoint_ns": ""}})
            messages = None if saved is None else thread_messages(saver, saved)
    except Exception:
        if strict:
            raise
        return None
    finally:
        conn.close()
    if saved is None or messages is None:
        return None
    return SavedThread(str(saved.config["configurable"]["checkpoint_id"]), messages)


def latest_checkpoint_id(db_path: Path, session_id: str) -> str | None:
    """The id of ``session_id``'s latest checkpoint (ids grow with time), read without
    reviving the checkpoint itself; None when there is none or it cannot be read."""
    conn = open_read_only(db_path)
    if conn is None:
        return None
    try:
        row = conn.execute(_LATEST, (session_id,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return str(row[0]) if row else None


def _missing_tables(conn: sqlite3.Connection) -> list[str]:
    found = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [table for table in CHECKPOINT_SCHEMA if table not in found]


def delete_thread(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete ``session_id``'s checkpoints and pending writes, in the caller's transaction (so
    the session's own record goes with them). Tables the checkpointer has not created yet are
    skipped."""
    missing = _missing_tables(conn)
    for table in CHECKPOINT_SCHEMA:
        if table not in missing:
            conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (session_id,))


def replay(messages: Iterable[Any]) -> Iterator[Event]:
    """A saved thread's messages as the events the live stream gave for them: a user message,
    each answer, its tool calls and their results. A call left without a result (the process
    was killed while it ran) ends as cancelled, as the next turn would record it."""
    from dcode.agent.events import ToolCallFinished, ToolCallRunning, ToolStatus
    from dcode.agent.stream import StreamTranslator

    translator = StreamTranslator(None)
    unanswered: dict[str, str] = {}
    for message in messages:
        for event in translator.on_message(message):
            match event:
                case ToolCallRunning(call_id=call_id, name=name):
                    unanswered[call_id] = name
                case ToolCallFinished(call_id=call_id):
                    unanswered.pop(call_id, None)
            yield event
    for call_id, name in unanswered.items():
        yield ToolCallFinished(call_id, name, ToolStatus.CANCELLED, "no result")
