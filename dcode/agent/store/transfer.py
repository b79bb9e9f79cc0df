"""Sessions moved between stores (``dcode sessions export|import``), through the interface only.

The file is JSON Lines, so that it is text, streams, and a damaged line is found by its number:

- a header: ``{"format": "dcode-sessions", "version": 1, "dcode": "0.1.0", "created": …}``;
- per session, a block: the ``session`` line (its record with the token figures, its turns and
  file changes, and the files beside the store it refers to), a ``checkpoint`` line for each
  checkpoint of each of its threads (the session's and its subagents' ``SESSION/task/N…``),
  parents first, each with its metadata, parent id and pending writes, a ``blob`` line for each
  kept file content ``/rewind`` needs, and a ``session_end`` line with the block's line count
  and the SHA-256 of its lines (a truncated or edited block is refused);
- an ``end`` line with the number of sessions (a file cut between blocks is refused too).

Checkpoints are read with the saver's ``alist`` and written back with ``aput``/``aput_writes``:
values go through the saver's ``serde`` (``dumps_typed``, base64), so a checkpoint's
``DeltaChannel`` snapshot and the writes the history is folded from travel as they are. A
pending write carries no ``task_path`` in LangGraph's API, yet the order of a checkpoint's
writes is ``(task_path, task_id, idx)``: an import gives each task's writes a ``task_path`` that
keeps the order they were read in, so the history folds to the same messages.

An import reads the whole file once before writing anything (bad input changes nothing), then
imports each session all or nothing: threads first, the records last in one transaction, and
the threads deleted again if anything fails. Attachments, archives and large tool results stay
files under ``$DCODE_HOME``: the export names them, and an import says which are missing here.
"""

# Any: checkpoints, their metadata and pending writes are LangGraph's untyped values

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from dcode.agent.budget import UsageRow
from dcode.agent.rewind.blobs import content_hash
from dcode.agent.store.base import (
    ChangeRecord,
    SessionHeld,
    SessionInfo,
    SessionRecords,
    SessionStore,
    TurnRecord,
)
from dcode.agent.store.serde import safe_serde

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata
    from langgraph.checkpoint.serde.base import SerializerProtocol

FORMAT = "dcode-sessions"
VERSION = 1
VALUE_TYPES = frozenset({"null", "bytes", "bytearray", "json", "msgpack"})
"""The serializer's types an import decodes: never ``pickle``."""
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ALL_SESSIONS = 10**9
ATTACHMENTS_DIR = "attachments"
"""Where ``Settings.attachments_dir`` keeps images, under ``$DCODE_HOME``."""


class ExportFormatError(Exception):
    """The file is not an export this dcode reads; the message is the line to show."""


@dataclass
class SavedCheckpoint:
    thread: str
    ns: str
    id: str
    parent: str | None
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    writes: list[tuple[str, str, Any]]
    """``(task_id, channel, value)`` in the order the saver read them."""


@dataclass
class SessionExport:
    records: SessionRecords
    checkpoints: list[SavedCheckpoint] = field(default_factory=list)
    blobs: dict[str, bytes] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    """Files beside the store the session refers to, relative to ``$DCODE_HOME``."""


# -- export ------------------------------------------------------------------------------------


def _text(typed: tuple[str, bytes]) -> list[str]:
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


class _Writer:
    """Writes lines, hashing a session's block as it goes."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.lines = 0

    def line(self, value: dict[str, Any]) -> None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.digest.update(text.encode("utf-8"))
        self.lines += 1
        self.out.write(text)

    def end_block(self, session_id: str) -> None:
        end = {"kind": "session_end", "id": session_id, "lines": self.lines}
        self.out.write(json.dumps({**end, "digest": self.digest.hexdigest()}) + "\n")
        self.digest, self.lines = hashlib.sha256(), 0


def beside_files(home: Path, threads: Iterable[str]) -> list[str]:
    """The files under ``home`` the threads left there: archives, plans and large results."""
    from dcode.agent.large_results import RESULTS_DIR, safe_name
    from dcode.agent.session_files import HISTORY_DIR, archive_path, plan_path

    found: list[Path] = []
    for thread in threads:
        history = home / HISTORY_DIR
        found += [
            p for p in (archive_path(history, thread), plan_path(history, thread)) if p.is_file()
        ]
        results = home / RESULTS_DIR / safe_name(thread, "session")
        if results.is_dir():
            found += sorted(p for p in results.iterdir() if p.is_file())
    return [str(path.relative_to(home)) for path in found]


def attachment_files(store: SessionStore, threads: Iterable[str]) -> list[str]:
    """The attachments the threads' messages refer to, relative to ``$DCODE_HOME``."""
    from dcode.media.attachment import (
        InvalidReferenceBlock,
        from_reference_block,
        is_reference_block,
    )
    from dcode.media.store import AttachmentStore

    attachments = AttachmentStore(store.home / ATTACHMENTS_DIR)
    found: dict[str, None] = {}
    for thread in threads:
        saved = store.read_thread(thread)
        for message in saved.messages if saved else []:
            content = message.content if isinstance(message.content, list) else []
            for block in filter(is_reference_block, content):
                try:
                    path = attachments.path_for(from_reference_block(block))
                except InvalidReferenceBlock:
                    continue
                found[str(path.relative_to(store.home))] = None
    return list(found)


async def export_sessions(store: SessionStore, session_ids: list[str], out: IO[str]) -> list[str]:
    """Write the sessions (exact ids) to ``out``; the notes to show (what stays behind)."""
    from dcode import __version__

    notes: list[str] = []
    saver = await store.open_checkpointer()
    try:
        writer = _Writer(out)
        header = {
            "format": FORMAT,
            "version": VERSION,
            "dcode": __version__,
            "created": time.time(),
        }
        out.write(json.dumps(header) + "\n")
        for session_id in session_ids:
            notes += await _export_session(store, saver, session_id, writer)
        out.write(json.dumps({"kind": "end", "sessions": len(session_ids)}) + "\n")
    finally:
        await store.aclose()
    return notes


async def _export_session(
    store: SessionStore, saver: BaseCheckpointSaver, session_id: str, writer: _Writer
) -> list[str]:
    records = store.export_records(session_id)
    if records is None:
        raise ValueError(f"no session {session_id!r}")
    threads = [session_id, *store.task_threads(session_id)]
    files = beside_files(store.home, threads) + attachment_files(store, threads)
    writer.line(
        {
            "kind": "session",
            "id": session_id,
            "info": dataclasses.asdict(records.info),
            "turns": [dataclasses.astuple(turn) for turn in records.turns],
            "changes": [dataclasses.astuple(change) for change in records.changes],
            "usage": [dataclasses.astuple(row) for row in records.usage],
            "files": files,
        }
    )
    for thread in threads:
        await _export_thread(saver, thread, writer)
    missing = _export_blobs(store, records.changes, writer)
    writer.end_block(session_id)
    notes = []
    if files:
        notes.append(
            f"session {session_id}: {len(files)} file(s) beside the store stay in "
            f"{store.home} (not in the export): {', '.join(files)}"
        )
    absent = [name for name in files if not (store.home / name).exists()]
    if absent:
        notes.append(f"session {session_id}: missing here already: {', '.join(absent)}")
    if missing:
        notes.append(
            f"session {session_id}: the kept content of {len(missing)} changed file(s) is "
            "missing here; /rewind cannot put those back"
        )
    return notes


async def _export_thread(saver: BaseCheckpointSaver, thread: str, writer: _Writer) -> None:
    serde = saver.serde
    saved = [tup async for tup in saver.alist({"configurable": {"thread_id": thread}})]
    saved.sort(key=lambda tup: str(tup.config["configurable"]["checkpoint_id"]))
    for tup in saved:
        configurable = tup.config["configurable"]
        parent = (
            tup.parent_config["configurable"].get("checkpoint_id") if tup.parent_config else None
        )
        writer.line(
            {
                "kind": "checkpoint",
                "thread": thread,
                "ns": str(configurable.get("checkpoint_ns", "")),
                "id": str(configurable["checkpoint_id"]),
                "parent": parent,
                "checkpoint": _text(serde.dumps_typed(tup.checkpoint)),
                "metadata": _text(serde.dumps_typed(tup.metadata)),
                "writes": [
                    [task_id, channel, *_text(serde.dumps_typed(value))]
                    for task_id, channel, value in tup.pending_writes or []
                ],
            }
        )


def _export_blobs(store: SessionStore, changes: list[ChangeRecord], writer: _Writer) -> list[str]:
    """Write the kept contents the changes name; the hashes missing here."""
    missing = []
    for sha in dict.fromkeys(c.before_sha for c in changes if c.kept and c.before_sha):
        try:
            data = store.blobs.get(sha)
        except OSError:
            missing.append(sha)
            continue
        writer.line({"kind": "blob", "sha": sha, "data": base64.b64encode(data).decode("ascii")})
    return missing


# -- reading an export -------------------------------------------------------------------------


class _Reader:
    """The file's lines as JSON objects, each error naming its line."""

    def __init__(self, source: IO[bytes], serde: SerializerProtocol) -> None:
        self.source = source
        self.serde = serde
        self.number = 0
        self.raw = b""
        self.digest = hashlib.sha256()
        self.block_lines = 0

    def fail(self, why: str) -> ExportFormatError:
        return ExportFormatError(f"line {self.number}: {why}")

    def next(self) -> dict[str, Any]:
        raw = self.source.readline()
        if not raw:
            raise ExportFormatError(
                f"the file ends after line {self.number}, before its last line: it is truncated"
            )
        self.number += 1
        self.raw = raw
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise self.fail("not a JSON line: the file is damaged") from None
        if not isinstance(value, dict):
            raise self.fail("not a JSON object: the file is damaged")
        return value

    def block_line(self) -> dict[str, Any]:
        """A line inside a session's block, counted into the block's digest."""
        value = self.next()
        if value.get("kind") != "session_end":
            self.digest.update(self.raw)
            self.block_lines += 1
        return value

    def get(self, value: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        found = value.get(key)
        if not isinstance(found, kind) or (isinstance(found, bool) and kind is not bool):
            raise self.fail(f"{key!r} is missing or not a {getattr(kind, '__name__', kind)}")
        return found

    def data(self, text: object) -> bytes:
        if not isinstance(text, str):
            raise self.fail("a value is not base64 text")
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise self.fail("a value is not valid base64") from None

    def value(self, typed: object) -> Any:
        if not (isinstance(typed, list) and len(typed) == 2 and typed[0] in VALUE_TYPES):
            raise self.fail("a stored value is not [type, base64] of a known type")
        try:
            return self.serde.loads_typed((typed[0], self.data(typed[1])))
        except ExportFormatError:
            raise
        except Exception as error:  # noqa: BLE001 - any decoding failure is a damaged line
            raise self.fail(f"a stored value cannot be decoded ({type(error).__name__})") from None


def read_header(reader: _Reader) -> None:
    try:
        header = reader.next()
    except ExportFormatError:
        raise ExportFormatError(
            "not a dcode sessions export (see `dcode sessions export`)"
        ) from None
    if header.get("format") != FORMAT:
        raise ExportFormatError("not a dcode sessions export (see `dcode sessions export`)")
    if header.get("version") != VERSION:
        raise ExportFormatError(
            f"export format version {header.get('version')!r} (from dcode {header.get('dcode')}); "
            f"this dcode reads version {VERSION}: import it with a matching dcode"
        )


def read_sessions(source: IO[bytes], serde: SerializerProtocol) -> Iterator[SessionExport]:
    """Each session of the export, whole and checked; ``ExportFormatError`` at the first fault."""
    reader = _Reader(source, serde)
    read_header(reader)
    count = 0
    while True:
        reader.digest, reader.block_lines = hashlib.sha256(), 0
        line = reader.block_line()
        if line.get("kind") == "end":
            if reader.get(line, "sessions", int) != count or source.readline():
                raise reader.fail("the end line does not close the file: it is damaged")
            return
        if line.get("kind") != "session":
            raise reader.fail("a session's block should start here: the file is damaged")
        yield _read_block(reader, line)
        count += 1


def _read_block(reader: _Reader, line: dict[str, Any]) -> SessionExport:
    session = SessionExport(_records(reader, line))
    session.files = [_relative(reader, name) for name in reader.get(line, "files", list)]
    session_id = session.records.info.id
    seen: dict[tuple[str, str], set[str]] = {}
    while True:
        line = reader.block_line()
        match line.get("kind"):
            case "checkpoint":
                session.checkpoints.append(_checkpoint(reader, line, session_id, seen))
            case "blob":
                data = reader.data(line.get("data"))
                if line.get("sha") != content_hash(data):
                    raise reader.fail("a kept file's content does not match its hash")
                session.blobs[content_hash(data)] = data
            case "session_end":
                if (
                    line.get("id") != session_id
                    or line.get("lines") != reader.block_lines
                    or line.get("digest") != reader.digest.hexdigest()
                ):
                    raise reader.fail(f"session {session_id}'s lines do not match their digest")
                return session
            case _:
                raise reader.fail("a line of an unknown kind: the file is damaged")


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {"str": str, "float": (int, float), "int": int}


def _records(reader: _Reader, line: dict[str, Any]) -> SessionRecords:
    info = reader.get(line, "info", dict)
    values = {
        item.name: reader.get(info, item.name, _FIELD_TYPES[str(item.type)])
        for item in dataclasses.fields(SessionInfo)
    }
    if not SESSION_ID.fullmatch(values["id"]) or line.get("id") != values["id"]:
        raise reader.fail("not a session id dcode makes")
    try:
        turns = [
            TurnRecord(str(p), float(s), c if c is None else str(c), int(m))
            for p, s, c, m in reader.get(line, "turns", list)
        ]
        changes = [
            ChangeRecord(
                int(i),
                str(p),
                b if b is None else str(b),
                bool(k),
                a if a is None else str(a),
                float(at),
            )
            for i, p, b, k, a, at in reader.get(line, "changes", list)
        ]
        usage = [  # an export made before usage was kept has none
            UsageRow(str(m), str(a), int(i), int(c), int(o), int(r), u if u is None else float(u))
            for m, a, i, c, o, r, u in line.get("usage") or []
        ]
    except (TypeError, ValueError):
        raise reader.fail("a turn, file change or usage figure is malformed") from None
    return SessionRecords(SessionInfo(**values), turns, changes, usage)


def _relative(reader: _Reader, name: object) -> str:
    if not isinstance(name, str) or Path(name).is_absolute() or ".." in Path(name).parts:
        raise reader.fail("a file beside the store is not named inside $DCODE_HOME")
    return name


def _checkpoint(
    reader: _Reader, line: dict[str, Any], session_id: str, seen: dict[tuple[str, str], set[str]]
) -> SavedCheckpoint:
    thread = reader.get(line, "thread", str)
    if thread != session_id and not thread.startswith(session_id + "/task/"):
        raise reader.fail(f"a checkpoint of thread {thread!r}, not one of session {session_id}")
    ns, checkpoint_id = reader.get(line, "ns", str), reader.get(line, "id", str)
    parent = line.get("parent")
    known = seen.setdefault((thread, ns), set())
    if parent is not None and parent not in known:
        raise reader.fail("a checkpoint comes before its parent: the file is damaged")
    checkpoint, metadata = reader.value(line.get("checkpoint")), reader.value(line.get("metadata"))
    if not (
        isinstance(checkpoint, dict)
        and checkpoint.get("id") == checkpoint_id
        and isinstance(checkpoint.get("channel_values"), dict)
        and isinstance(checkpoint.get("channel_versions"), dict)
        and isinstance(metadata, dict)
    ):
        raise reader.fail("a checkpoint's value is not a checkpoint")
    writes = []
    for write in reader.get(line, "writes", list):
        if not (
            isinstance(write, list) and len(write) == 4 and all(isinstance(w, str) for w in write)
        ):
            raise reader.fail("a pending write is malformed")
        writes.append((write[0], write[1], reader.value(write[2:])))
    known.add(checkpoint_id)
    return SavedCheckpoint(
        thread,
        ns,
        checkpoint_id,
        parent,
        cast("Checkpoint", checkpoint),
        cast("CheckpointMetadata", metadata),
        writes,
    )


# -- import ------------------------------------------------------------------------------------


async def import_sessions(store: SessionStore, source: IO[bytes], *, replace: bool) -> list[str]:
    """Import every session of the export ``source`` (seekable); the lines to show. The whole
    file is read and checked first: ``ExportFormatError`` and nothing written when it is bad."""
    serde = safe_serde()  # an export is a file from elsewhere: safe types only
    saver = await store.open_checkpointer()
    try:
        for _session in read_sessions(source, serde):
            pass
        source.seek(0)
        return [
            await _import_session(store, saver, session, replace=replace)
            for session in read_sessions(source, serde)
        ]
    finally:
        await store.aclose()


async def _import_session(
    store: SessionStore, saver: BaseCheckpointSaver, session: SessionExport, *, replace: bool
) -> str:
    info = session.records.info
    there = store.get(info.id)
    exists = there is not None and there.id == info.id
    if exists and not replace:
        return f"skipped session {info.id}: it is already in {store.name} (--replace replaces it)"
    try:
        with store.hold(info.id):
            if exists:
                store.delete(info.id)
            await _write_session(store, saver, session)
    except SessionHeld as held:
        return f"skipped session {info.id}: {held}"
    missing = [name for name in session.files if not (store.home / name).exists()]
    note = (
        f"; {len(missing)} file(s) beside the store are not here: {', '.join(missing)}"
        if missing
        else ""
    )
    return f"imported session {info.id} ({info.title or 'untitled'}){note}"


async def _write_session(
    store: SessionStore, saver: BaseCheckpointSaver, session: SessionExport
) -> None:
    """Threads, then records (one transaction); on any failure, the threads go again."""
    threads = sorted({checkpoint.thread for checkpoint in session.checkpoints})
    for thread in threads:  # what an import that failed half-way may have left
        await saver.adelete_thread(thread)
    try:
        for data in session.blobs.values():
            store.blobs.put(data)
        await _put_checkpoints(saver, session.checkpoints)
        store.import_records(session.records)
    except BaseException:
        for thread in threads:
            with contextlib.suppress(Exception):
                await saver.adelete_thread(thread)
        raise


def _config(thread: str, ns: str, checkpoint_id: str | None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def _put_checkpoints(saver: BaseCheckpointSaver, checkpoints: list[SavedCheckpoint]) -> None:
    """``aput`` each checkpoint (parents first) with the channel versions new since its parent,
    then its writes, one ``aput_writes`` per task, with a ``task_path`` keeping their order."""
    versions: dict[tuple[str, str, str], dict[str, Any]] = {}
    for saved in checkpoints:
        before = versions.get((saved.thread, saved.ns, saved.parent or ""), {})
        current = saved.checkpoint["channel_versions"]
        values = saved.checkpoint["channel_values"]
        new = {k: v for k, v in current.items() if before.get(k) != v or k in values}
        config = _config(saved.thread, saved.ns, saved.parent)
        await saver.aput(config, saved.checkpoint, saved.metadata, new)
        versions[(saved.thread, saved.ns, saved.id)] = current
        at = _config(saved.thread, saved.ns, saved.id)
        for number, (task_id, writes) in enumerate(groupby(saved.writes, key=lambda w: w[0])):
            await saver.aput_writes(
                at, [(channel, value) for _t, channel, value in writes], task_id, f"{number:06d}"
            )
