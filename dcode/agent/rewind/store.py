"""A session's turns and the file changes made during them, in ``sessions.db``.

A turn is recorded as it starts: its prompt, the thread's checkpoint before it (None when the
thread had none), and the id of the last file change before it. File changes are numbered in
the order they happen, across every session of the home, so "what changed since turn T" is
the changes of T's session numbered above T's mark, whatever was rewound in between.

A change records the file's resolved path, the hash of what it held before (None: there was
no file; ``kept`` False: it was too large to keep) and, once the write is done, the hash of
what dcode left there, which tells a rewind whether something else changed the file since.

Standard library only: ``dcode sessions rewind`` lists turns without loading the agent.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from dcode.agent.rewind.blobs import FILE_HISTORY_DIR, MAX_BLOB_BYTES, BlobStore, current_hash
from dcode.agent.sessions import connect
from dcode.regular_files import NotRegularFile, open_regular
from dcode.settings.private_files import write_private

PROMPT_CHARS = 20_000
KEEP_DAYS = 30
DAY = 24 * 3600
PRUNED_MARKER = "pruned"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS dcode_turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    prompt TEXT NOT NULL,
    started REAL NOT NULL,
    checkpoint_id TEXT,
    change_mark INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS dcode_turns_session ON dcode_turns(session_id, id);
CREATE TABLE IF NOT EXISTS dcode_file_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    before_sha TEXT,
    kept INTEGER NOT NULL,
    after_sha TEXT,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS dcode_file_changes_session ON dcode_file_changes(session_id, id);
"""


@dataclass(frozen=True, slots=True)
class Turn:
    id: int
    session_id: str
    number: int
    """Its place among the session's turns, from 1."""
    prompt: str
    started: float
    checkpoint_id: str | None
    change_mark: int
    files_changed: int = 0
    """How many files dcode's file tools changed from this turn on."""


@dataclass(frozen=True, slots=True)
class FileChange:
    id: int
    path: Path
    before_sha: str | None
    kept: bool
    after_sha: str | None


class RewindStore:
    def __init__(self, db_path: Path, home: Path, *, read_only: bool = False) -> None:
        self.db_path = db_path
        self.read_only = read_only
        self.blobs = BlobStore(home / FILE_HISTORY_DIR)

    def _connect(self) -> AbstractContextManager[sqlite3.Connection]:
        return connect(self.db_path, _SCHEMA, read_only=self.read_only)

    # -- turns ----------------------------------------------------------------------------

    def begin_turn(self, session_id: str, prompt: str, checkpoint_id: str | None) -> int:
        """Record a turn as it starts; a prompt over ``PROMPT_CHARS`` keeps its head only (a
        huge paste lives in its archive, never whole in the database)."""
        if len(prompt) > PROMPT_CHARS:
            prompt = prompt[:PROMPT_CHARS] + f"\n[… {len(prompt) - PROMPT_CHARS:,} more characters]"
        with self._connect() as conn:
            mark = conn.execute("SELECT coalesce(max(id), 0) FROM dcode_file_changes").fetchone()[0]
            cursor = conn.execute(
                "INSERT INTO dcode_turns (session_id, prompt, started, checkpoint_id, change_mark) VALUES (?, ?, ?, ?, ?)",
                (session_id, prompt, time.time(), checkpoint_id, mark),
            )
            return int(cursor.lastrowid or 0)

    def turns(self, session_id: str) -> list[Turn]:
        """The session's turns, oldest first, each with the files changed from it on."""
        if not self.db_path.exists():
            return []
        with self._connect() as conn:
            if not _has_tables(conn):
                return []
            rows = conn.execute(
                "SELECT id, session_id, prompt, started, checkpoint_id, change_mark FROM dcode_turns WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
            changes = conn.execute(
                "SELECT id, path FROM dcode_file_changes WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
        turns = []
        for number, (turn_id, sid, prompt, started, checkpoint, mark) in enumerate(rows, start=1):
            touched = {path for change_id, path in changes if change_id > mark}
            turns.append(
                Turn(turn_id, sid, number, prompt, started, checkpoint, mark, len(touched))
            )
        return turns

    def forget_turns(self, session_id: str, from_turn: int) -> None:
        """Drop turn ``from_turn`` (an id) and every later one of the session."""
        with self._connect() as conn:
            conn.execute(
                "DELETE FROM dcode_turns WHERE session_id = ? AND id >= ?", (session_id, from_turn)
            )

    # -- file changes ---------------------------------------------------------------------

    def record_before(self, session_id: str, path: Path) -> int:
        """Keep what ``path`` (resolved) holds now, before dcode writes it; returns the change's id."""
        before_sha, kept = self._keep(path)
        with self._connect() as conn:
            cursor = conn.execute(
                "INSERT INTO dcode_file_changes (session_id, path, before_sha, kept, at) VALUES (?, ?, ?, ?, ?)",
                (session_id, str(path), before_sha, int(kept), time.time()),
            )
            return int(cursor.lastrowid or 0)

    def record_after(self, change_id: int, path: Path) -> None:
        """Note what dcode left at ``path``: a rewind compares it with what is there then."""
        after = current_hash(path)
        with self._connect() as conn:
            conn.execute(
                "UPDATE dcode_file_changes SET after_sha = ? WHERE id = ?", (after, change_id)
            )

    def changes_since(self, session_id: str, mark: int) -> list[FileChange]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT id, path, before_sha, kept, after_sha FROM dcode_file_changes WHERE session_id = ? AND id > ? ORDER BY id",
                (session_id, mark),
            ).fetchall()
        return [
            FileChange(i, Path(p), before, bool(kept), after) for i, p, before, kept, after in rows
        ]

    def drop_changes(self, change_ids: Iterable[int]) -> None:
        ids = list(change_ids)
        with self._connect() as conn:
            conn.executemany("DELETE FROM dcode_file_changes WHERE id = ?", [(i,) for i in ids])

    def delete_session(self, session_id: str) -> None:
        """Forget the session's turns and changes, and the kept contents nothing else needs."""
        if not self.db_path.exists():
            return
        with self._connect() as conn:
            conn.execute("DELETE FROM dcode_turns WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM dcode_file_changes WHERE session_id = ?", (session_id,))
            wanted = {
                row[0]
                for row in conn.execute(
                    "SELECT before_sha FROM dcode_file_changes WHERE before_sha IS NOT NULL"
                )
            }
        self.blobs.keep_only(wanted)

    def prune(self, *, now: float | None = None, keep_days: float = KEEP_DAYS) -> bool:
        """Forget turns and file changes older than ``keep_days``, and the kept contents nothing
        needs any more; at most once a day (a marker's time says when it last ran). True when
        it ran."""
        now = time.time() if now is None else now
        marker = self.blobs.root / PRUNED_MARKER
        try:
            if now - marker.stat().st_mtime < DAY:
                return False
        except FileNotFoundError:
            pass
        if not self.db_path.exists():
            return False
        cutoff = now - keep_days * DAY
        with self._connect() as conn:
            conn.execute("DELETE FROM dcode_turns WHERE started < ?", (cutoff,))
            conn.execute("DELETE FROM dcode_file_changes WHERE at < ?", (cutoff,))
            wanted = {
                row[0]
                for row in conn.execute(
                    "SELECT before_sha FROM dcode_file_changes WHERE before_sha IS NOT NULL"
                )
            }
        self.blobs.keep_only(wanted)
        write_private(marker, "")
        os.utime(marker, (now, now))
        return True

    def _keep(self, path: Path) -> tuple[str | None, bool]:
        """(the hash of what ``path`` holds, whether it was kept); (None, True) for no file,
        a named pipe or a device included (the file tools write none of those)."""
        try:
            with open_regular(path) as handle:
                if os.fstat(handle.fileno()).st_size > MAX_BLOB_BYTES:
                    return current_hash(path), False
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError, NotRegularFile):
            return None, True
        return self.blobs.put(data), True


def _has_tables(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'dcode_turns'").fetchone()[0]
        == 1
    )


@dataclass(frozen=True, slots=True)
class ChangeLog:
    """Where a run records the files it writes: the session's part of the store (a subagent's
    runs record into their parent session's)."""

    store: RewindStore
    session_id: str

    def before(self, path: Path) -> int:
        return self.store.record_before(self.session_id, path)

    def after(self, change_id: int, path: Path) -> None:
        self.store.record_after(change_id, path)
