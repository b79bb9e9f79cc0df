"""dcode's own records (the session list, the turns rewind goes back to, the changed files'
kept contents), written once in SQL both stores speak: ``SqliteStore`` and ``PostgresStore``
differ only in how they connect, what a failure means, and how they keep the graph's threads.

Statements use ``?`` for their parameters (SQLite's style; the PostgreSQL unit turns each into
``%s``). Each store gives a ``Unit``: one transaction on one connection, whose rows are dicts.
"""

# Any: rows are dicts of column values, as the database drivers give them

from __future__ import annotations

import builtins
import dataclasses
import os
import time
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar, Protocol

from dcode.agent.budget import UsageRow
from dcode.agent.rewind.blobs import MAX_BLOB_BYTES, current_hash
from dcode.agent.store.base import (
    DAY_SECONDS,
    KEEP_DAYS,
    ChangeRecord,
    FileChange,
    SessionInfo,
    SessionRecords,
    SessionStore,
    Turn,
    TurnRecord,
    clipped_prompt,
    files_changed,
    moved_mark,
    title_from_prompt,
)
from dcode.regular_files import NotRegularFile, open_regular
from dcode.settings.private_files import write_private

PRUNED_MARKER = "pruned"
TURN_COLUMNS = "id, session_id, prompt, started, checkpoint_id, change_mark"
USAGE_COLUMNS = "session_id, model, agent, input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost_usd, priced"


class Unit(Protocol):
    """One transaction on one connection: committed when its block ends well."""

    def rows(self, sql: str, params: Sequence[object] = ()) -> builtins.list[dict[str, Any]]: ...

    def run(self, sql: str, params: Sequence[object] = ()) -> None: ...

    def run_many(self, sql: str, params: Iterable[Sequence[object]]) -> None: ...

    def insert(self, sql: str, params: Sequence[object]) -> int:
        """Run an INSERT of one row; the row's new ``id``."""
        ...


def escaped(text: str) -> str:
    """``text`` matched as it is by ``LIKE … ESCAPE '\\'`` (its ``%`` and ``_`` too)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class SqlRecords(SessionStore):
    """The record methods of ``SessionStore`` over a ``Unit``; the threads, the hold and the
    failures stay with each store."""

    LIKE: ClassVar[str] = "LIKE"
    """The case-insensitive LIKE: SQLite's LIKE is (for ASCII), PostgreSQL's is ILIKE."""

    @abstractmethod
    def _unit(self) -> AbstractContextManager[Unit]:
        """A writer's unit: dcode's tables are there once it starts (made if need be)."""

    @abstractmethod
    def _readable(self, *, turns: bool = False, usage: bool = False) -> bool:
        """Whether there is anything to read, found without making anything; ``turns``: the
        turn and change tables too, ``usage``: the usage table too (a file an earlier dcode
        wrote may lack them)."""

    @abstractmethod
    def _delete_threads(self, session_id: str) -> None:
        """Delete the session's graph threads, its subagents' too."""

    def _read(self, sql: str, params: Sequence[object] = ()) -> builtins.list[dict[str, Any]]:
        if not self._readable():
            return []
        with self._unit() as db:
            return db.rows(sql, params)

    def _sessions(self, sql: str, params: Sequence[object]) -> builtins.list[SessionInfo]:
        return [SessionInfo(**row) for row in self._read(sql, params)]

    # -- the session list ------------------------------------------------------------------

    def create(self, session_id: str, cwd: Path, model: str) -> SessionInfo:
        now = time.time()
        with self._unit() as db:
            db.run(
                "INSERT INTO dcode_sessions (id, cwd, model, created, updated) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (session_id, str(cwd), model, now, now),
            )
        info = self.get(session_id)
        assert info is not None
        return info

    def fork(self, source: SessionInfo, session_id: str, *, message_count: int) -> SessionInfo:
        now = time.time()
        with self._unit() as db:
            db.run(
                """INSERT INTO dcode_sessions (id, cwd, model, title, created, updated, message_count, context_tokens)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    session_id,
                    source.cwd,
                    source.model,
                    source.title,
                    now,
                    now,
                    message_count,
                    source.context_tokens,
                ),
            )
        info = self.get(session_id)
        assert info is not None
        return info

    def start_turn(self, session_id: str, *, prompt: str, message_count: int) -> None:
        with self._unit() as db:
            db.run(
                """UPDATE dcode_sessions SET
                       title = CASE WHEN title = '' THEN ? ELSE title END, updated = ?, message_count = ?
                   WHERE id = ?""",
                (title_from_prompt(prompt), time.time(), message_count, session_id),
            )

    def record_turn(
        self,
        session_id: str,
        *,
        prompt: str,
        model: str,
        message_count: int,
        input_tokens: int,
        output_tokens: int,
        context_tokens: int,
        cached_tokens: int = 0,
        subagent_tokens: tuple[int, int, int] = (0, 0, 0),
    ) -> None:
        with self._unit() as db:
            db.run(
                """UPDATE dcode_sessions SET
                       title = CASE WHEN title = '' THEN ? ELSE title END,
                       model = ?, updated = ?, message_count = ?,
                       input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
                       cached_tokens = cached_tokens + ?,
                       subagent_input_tokens = subagent_input_tokens + ?,
                       subagent_output_tokens = subagent_output_tokens + ?,
                       subagent_cached_tokens = subagent_cached_tokens + ?,
                       context_tokens = CASE WHEN ? > 0 THEN ? ELSE context_tokens END
                   WHERE id = ?""",
                (
                    title_from_prompt(prompt),
                    model,
                    time.time(),
                    message_count,
                    input_tokens,
                    output_tokens,
                    cached_tokens,
                    *subagent_tokens,
                    context_tokens,
                    context_tokens,
                    session_id,
                ),
            )

    def record_usage(self, session_id: str, rows: Sequence[UsageRow]) -> None:
        with self._unit() as db:
            _add_usage(db, session_id, rows)

    def usage(self, session_id: str) -> builtins.list[UsageRow]:
        if not self._readable(usage=True):
            return []
        with self._unit() as db:
            found = db.rows(
                f"SELECT {USAGE_COLUMNS} FROM dcode_usage WHERE session_id = ? ORDER BY model, agent",
                (session_id,),
            )
        return [
            UsageRow(
                row["model"],
                row["agent"],
                int(row["input_tokens"]),
                int(row["cached_tokens"]),
                int(row["output_tokens"]),
                int(row["reasoning_tokens"]),
                float(row["cost_usd"]) if row["priced"] else None,
            )
            for row in found
        ]

    def rewound(self, session_id: str, *, message_count: int) -> None:
        with self._unit() as db:
            db.run(
                """UPDATE dcode_sessions SET
                       title = CASE WHEN ? = 0 THEN '' ELSE title END, updated = ?, message_count = ?, context_tokens = 0
                   WHERE id = ?""",
                (message_count, time.time(), message_count, session_id),
            )

    def get(self, session_id: str) -> SessionInfo | None:
        found = self._sessions("SELECT * FROM dcode_sessions WHERE id = ?", (session_id,))
        if not found:
            found = self._sessions(
                "SELECT * FROM dcode_sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
                (escaped(session_id) + "%",),
            )
        return found[0] if len(found) == 1 else None

    def list(
        self, *, cwd: Path | None = None, limit: int = 200, search: str = ""
    ) -> builtins.list[SessionInfo]:
        clauses: builtins.list[str] = []
        params: builtins.list[object] = []
        if cwd is not None:
            clauses.append("cwd = ?")
            params.append(str(cwd))
        if search:
            like = f"{self.LIKE} ? ESCAPE '\\'"
            clauses.append(f"(title {like} OR cwd {like} OR id {like})")
            params.extend([f"%{escaped(search)}%"] * 3)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return self._sessions(
            f"SELECT * FROM dcode_sessions {where} ORDER BY updated DESC LIMIT ?", (*params, limit)
        )

    def delete(self, session_id: str) -> bool:
        info = self.get(session_id)
        if info is None:
            return False
        # The threads first: a session whose deletion stopped half-way is still listed, and
        # deleting it again finishes the job.
        self._delete_threads(info.id)
        with self._unit() as db:
            db.run("DELETE FROM dcode_sessions WHERE id = ?", (info.id,))
            db.run("DELETE FROM dcode_turns WHERE session_id = ?", (info.id,))
            db.run("DELETE FROM dcode_file_changes WHERE session_id = ?", (info.id,))
            db.run("DELETE FROM dcode_usage WHERE session_id = ?", (info.id,))
            wanted = _kept_hashes(db)
        self.blobs.keep_only(wanted)
        return True

    # -- turns and file changes ---------------------------------------------------------------

    def begin_turn(self, session_id: str, prompt: str, checkpoint_id: str | None) -> int:
        with self._unit() as db:
            return db.insert(
                """INSERT INTO dcode_turns (session_id, prompt, started, checkpoint_id, change_mark)
                   VALUES (?, ?, ?, ?, (SELECT coalesce(max(id), 0) FROM dcode_file_changes))""",
                (session_id, clipped_prompt(prompt), time.time(), checkpoint_id),
            )

    def turns(self, session_id: str) -> builtins.list[Turn]:
        if not self._readable(turns=True):
            return []
        with self._unit() as db:
            rows = db.rows(
                f"SELECT {TURN_COLUMNS} FROM dcode_turns WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
            changes = db.rows(
                "SELECT id, path FROM dcode_file_changes WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
        counts = files_changed(
            (row["change_mark"] for row in rows), [(c["id"], c["path"]) for c in changes]
        )
        return [
            Turn(
                row["id"],
                row["session_id"],
                number,
                row["prompt"],
                row["started"],
                row["checkpoint_id"],
                row["change_mark"],
                count,
            )
            for number, (row, count) in enumerate(zip(rows, counts, strict=True), start=1)
        ]

    def forget_turns(self, session_id: str, from_turn: int) -> None:
        with self._unit() as db:
            db.run(
                "DELETE FROM dcode_turns WHERE session_id = ? AND id >= ?", (session_id, from_turn)
            )

    def record_before(self, session_id: str, path: Path) -> int:
        before_sha, kept = self._keep(path)
        with self._unit() as db:
            return db.insert(
                "INSERT INTO dcode_file_changes (session_id, path, before_sha, kept, at) VALUES (?, ?, ?, ?, ?)",
                (session_id, str(path), before_sha, kept, time.time()),
            )

    def record_after(self, change_id: int, path: Path) -> None:
        after = current_hash(path)
        with self._unit() as db:
            db.run("UPDATE dcode_file_changes SET after_sha = ? WHERE id = ?", (after, change_id))

    def changes_since(self, session_id: str, mark: int) -> builtins.list[FileChange]:
        with self._unit() as db:
            rows = db.rows(
                "SELECT id, path, before_sha, kept, after_sha FROM dcode_file_changes WHERE session_id = ? AND id > ? ORDER BY id",
                (session_id, mark),
            )
        return [
            FileChange(r["id"], Path(r["path"]), r["before_sha"], bool(r["kept"]), r["after_sha"])
            for r in rows
        ]

    def drop_changes(self, change_ids: Iterable[int]) -> None:
        with self._unit() as db:
            db.run_many("DELETE FROM dcode_file_changes WHERE id = ?", [(i,) for i in change_ids])

    def export_records(self, session_id: str) -> SessionRecords | None:
        found = self._sessions("SELECT * FROM dcode_sessions WHERE id = ?", (session_id,))
        if not found:
            return None
        if not self._readable(turns=True):
            return SessionRecords(found[0], [], [])
        with self._unit() as db:
            turns = db.rows(
                "SELECT prompt, started, checkpoint_id, change_mark FROM dcode_turns WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
            changes = db.rows(
                "SELECT id, path, before_sha, kept, after_sha, at FROM dcode_file_changes WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
        return SessionRecords(
            found[0],
            [TurnRecord(**row) for row in turns],
            [ChangeRecord(**{**row, "kept": bool(row["kept"])}) for row in changes],
            self.usage(session_id),
        )

    def import_records(self, records: SessionRecords) -> None:
        """The changes take new ids from the store, in their order (other sessions' changes
        may come between: a turn's mark only counts its own session's)."""
        info = dataclasses.asdict(records.info)
        with self._unit() as db:
            if db.rows("SELECT 1 AS taken FROM dcode_sessions WHERE id = ?", (info["id"],)):
                raise ValueError(f"session {info['id']} is already in {self.name}")
            db.run(
                f"INSERT INTO dcode_sessions ({', '.join(info)}) VALUES ({', '.join('?' * len(info))})",
                tuple(info.values()),
            )
            new_ids = {
                change.id: db.insert(
                    "INSERT INTO dcode_file_changes (session_id, path, before_sha, kept, after_sha, at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        info["id"],
                        change.path,
                        change.before_sha,
                        change.kept,
                        change.after_sha,
                        change.at,
                    ),
                )
                for change in records.changes
            }
            _add_usage(db, info["id"], records.usage)
            base = min(new_ids.values(), default=1) - 1
            db.run_many(
                "INSERT INTO dcode_turns (session_id, prompt, started, checkpoint_id, change_mark) VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        info["id"],
                        turn.prompt,
                        turn.started,
                        turn.checkpoint_id,
                        moved_mark(turn.change_mark, new_ids, base),
                    )
                    for turn in records.turns
                ],
            )

    def prune(self, *, now: float | None = None, keep_days: float = KEEP_DAYS) -> bool:
        now = time.time() if now is None else now
        marker = self.blobs.root / PRUNED_MARKER
        try:
            if now - marker.stat().st_mtime < DAY_SECONDS:
                return False
        except FileNotFoundError:
            pass
        if not self._readable():
            return False
        cutoff = now - keep_days * DAY_SECONDS
        with self._unit() as db:
            db.run("DELETE FROM dcode_turns WHERE started < ?", (cutoff,))
            db.run("DELETE FROM dcode_file_changes WHERE at < ?", (cutoff,))
            wanted = _kept_hashes(db)
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


def _add_usage(db: Unit, session_id: str, rows: Sequence[UsageRow]) -> None:
    """Add ``rows`` to the session's usage, each to its model and agent's."""
    db.run_many(
        f"""INSERT INTO dcode_usage ({USAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (session_id, model, agent) DO UPDATE SET
               input_tokens = dcode_usage.input_tokens + excluded.input_tokens,
               cached_tokens = dcode_usage.cached_tokens + excluded.cached_tokens,
               output_tokens = dcode_usage.output_tokens + excluded.output_tokens,
               reasoning_tokens = dcode_usage.reasoning_tokens + excluded.reasoning_tokens,
               cost_usd = dcode_usage.cost_usd + excluded.cost_usd,
               priced = CASE WHEN dcode_usage.priced = 1 OR excluded.priced = 1 THEN 1 ELSE 0 END""",
        [
            (
                session_id,
                row.model,
                row.agent,
                row.input_tokens,
                row.cached_tokens,
                row.output_tokens,
                row.reasoning_tokens,
                row.cost_usd or 0.0,
                0 if row.cost_usd is None else 1,
            )
            for row in rows
        ],
    )


def _kept_hashes(db: Unit) -> set[str]:
    """The kept contents any change of any session still needs: the blobs are this machine's
    files, the changes everyone's (another machine's hashes keep nothing here)."""
    rows = db.rows(
        "SELECT DISTINCT before_sha FROM dcode_file_changes WHERE before_sha IS NOT NULL"
    )
    return {row["before_sha"] for row in rows}
