"""What dcode keeps about a session, and the one interface every store keeps it through.

A store holds the session list (titles, sizes, token figures), the turns and file changes
``/rewind`` needs, the conversation's checkpoints (through a LangGraph checkpointer it owns)
with its subagents' threads, and the guarantee that one process at a time runs a session.
``sqlite.SqliteStore`` is the default (``$DCODE_HOME/sessions.db``); ``postgres.PostgresStore``
keeps them in a shared PostgreSQL server (``database_url``). Both implement the same methods and
nothing outside ``dcode.agent.store`` knows which one it talks to.

The record methods block (the CLI calls them as they are, the engine from a thread), so that
``dcode sessions list`` answers without an event loop or the agent; the checkpointer the graph
runs on is async. Thread reads and deletions go through the checkpointer's public API only
(``get_tuple``, ``list``, ``delete_thread`` and the delta-channel history), never its tables.

Files beside the store (attachments, archives, large results, the upload index and the kept
contents of changed files, ``blobs``) stay under ``$DCODE_HOME`` whatever the store.
"""

# Any: a saved thread's messages and compaction log are LangGraph checkpoint values, untyped

from __future__ import annotations

import builtins
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from dcode.agent.budget import UsageRow
    from dcode.agent.rewind.blobs import BlobStore

TITLE_LENGTH = 80
PROMPT_CHARS = 20_000
KEEP_DAYS = 30
DAY_SECONDS = 24 * 3600
DAMAGED_DATABASE = "damaged_database"
"""The ``ErrorEvent`` kind of a turn stopped by a damaged store (headless exits 2 for it)."""


class SessionDatabaseError(Exception):
    """The store cannot be used; the message is the line to show, naming the store and how to
    get going again. ``damaged``: what is stored is broken (not just out of reach)."""

    def __init__(self, message: str, *, damaged: bool) -> None:
        self.damaged = damaged
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    cwd: str
    model: str
    title: str
    created: float
    updated: float
    message_count: int
    input_tokens: int = 0
    output_tokens: int = 0
    context_tokens: int = 0
    cached_tokens: int = 0
    """The part of ``input_tokens`` the provider read from its prompt cache."""
    subagent_input_tokens: int = 0
    """The part of ``input_tokens`` the session's subagents used (and so on for the others)."""
    subagent_output_tokens: int = 0
    subagent_cached_tokens: int = 0


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


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """A turn as an export carries it: ``change_mark`` counts in the exported change ids."""

    prompt: str
    started: float
    checkpoint_id: str | None
    change_mark: int


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """A file change as an export carries it, with when it was made (pruning reads it)."""

    id: int
    path: str
    before_sha: str | None
    kept: bool
    after_sha: str | None
    at: float


@dataclass(frozen=True)
class SessionRecords:
    """Everything a store keeps about a session outside its threads, as ``dcode sessions
    export`` moves it between stores: the listed record with its token figures, the turns and
    the file changes ``/rewind`` reads (oldest first), and what it spent by model and agent."""

    info: SessionInfo
    turns: list[TurnRecord]
    changes: list[ChangeRecord]
    usage: list[UsageRow] = field(default_factory=list)


@dataclass(frozen=True)
class SavedThread:
    checkpoint_id: str
    messages: list[Any]


class SessionHeld(Exception):
    """Another process holds the session; ``pid`` is None if it has not said yet."""

    def __init__(self, session_id: str, pid: int | None) -> None:
        self.session_id = session_id
        self.pid = pid
        super().__init__(f"session {session_id} is open in {self.holder}")

    @property
    def holder(self) -> str:
        return f"another dcode (pid {self.pid})" if self.pid else "another dcode"


class SessionHold(Protocol):
    """A session this process holds; ``release()`` lets the next process have it."""

    @property
    def held(self) -> bool: ...

    def release(self) -> None: ...

    def confirm(self) -> None:
        """Before a turn writes to the session: make sure this process still holds it. A hold
        lost under a running process (its connection dropped) is taken again, or
        ``SessionHeld`` says which process has the session now."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


def title_from_prompt(prompt: str) -> str:
    line = next((part.strip() for part in prompt.splitlines() if part.strip()), "")
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


def clipped_prompt(prompt: str) -> str:
    """A turn's prompt as a store keeps it: over ``PROMPT_CHARS`` its head only (a huge paste
    lives in its archive, never whole in the store)."""
    if len(prompt) <= PROMPT_CHARS:
        return prompt
    return prompt[:PROMPT_CHARS] + f"\n[… {len(prompt) - PROMPT_CHARS:,} more characters]"


def files_changed(turn_marks: Iterable[int], changes: list[tuple[int, str]]) -> list[int]:
    """For each turn's mark, how many files the changes numbered above it touched."""
    return [len({path for change_id, path in changes if change_id > mark}) for mark in turn_marks]


def renumbered(changes: Iterable[ChangeRecord], base: int) -> dict[int, int]:
    """Imported changes' new ids, in their order, above ``base`` (the store's largest)."""
    return {change.id: base + number for number, change in enumerate(changes, start=1)}


def moved_mark(mark: int, new_ids: dict[int, int], base: int) -> int:
    """A turn's ``change_mark`` among renumbered changes: above it the same changes as before."""
    return max((new for old, new in new_ids.items() if old <= mark), default=base)


class SessionStore(ABC):
    """Everything dcode keeps about its sessions. ``read_only``: never writes (``sessions
    show``, listing turns); ``home``: ``$DCODE_HOME``, where the files beside the store live."""

    home: Path
    read_only: bool
    blobs: BlobStore
    """What changed files held before dcode changed them, by content hash (files)."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store is, as a message shows it (a file's path, a server's address without
        its secrets)."""

    @property
    def name(self) -> str:
        return f"the session database {self.location}"

    # -- the session list ------------------------------------------------------------------

    @abstractmethod
    def create(self, session_id: str, cwd: Path, model: str) -> SessionInfo:
        """The session's record, made if it is not there yet."""

    @abstractmethod
    def fork(self, source: SessionInfo, session_id: str, *, message_count: int) -> SessionInfo:
        """A new session's record for a copy of ``source``'s history: its title, cwd, model and
        context figure; the tokens spent so far stay ``source``'s."""

    @abstractmethod
    def start_turn(self, session_id: str, *, prompt: str, message_count: int) -> None:
        """What a session is listed by as soon as a turn starts: its title (the first prompt)
        and the thread's size with the prompt in it, so that a process killed during the turn
        leaves a session that lists properly. ``record_turn`` completes the figures."""

    @abstractmethod
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
        """Add a turn's usage figures; ``subagent_tokens`` (input, output, cached) is the part of
        them its subagents used. A ``context_tokens`` of 0 leaves the last one as it was."""

    @abstractmethod
    def record_usage(self, session_id: str, rows: Sequence[UsageRow]) -> None:
        """Add what a turn (or a compaction) spent, by model and agent, to the session's."""

    @abstractmethod
    def usage(self, session_id: str) -> builtins.list[UsageRow]:
        """What the session spent, by model and agent (``/cost``, and a budget's start)."""

    @abstractmethod
    def rewound(self, session_id: str, *, message_count: int) -> None:
        """The session's conversation went back: its size now, and no title when it is empty
        (the next prompt names it again). The tokens spent stay spent."""

    @abstractmethod
    def get(self, session_id: str) -> SessionInfo | None:
        """The session by its id, or by a prefix only one session's id has."""

    @abstractmethod
    def list(
        self, *, cwd: Path | None = None, limit: int = 200, search: str = ""
    ) -> builtins.list[SessionInfo]:
        """Sessions, the latest updated first; ``search`` matches title, cwd or id."""

    def latest(self, *, cwd: Path | None = None) -> SessionInfo | None:
        found = self.list(cwd=cwd, limit=1)
        return found[0] if found else None

    @abstractmethod
    def delete(self, session_id: str) -> bool:
        """Delete the session (by id or unique prefix): its record, its thread and its
        subagents' threads, its turns and file changes, and the kept contents nothing else
        needs. False when there is no such session."""

    @abstractmethod
    def check(self) -> int | None:
        """Read the whole store once (``dcode doctor``); the number of sessions, None when
        nothing was ever saved (and nothing is made to find out), or ``SessionDatabaseError``
        saying what is wrong."""

    # -- turns and file changes (rewind) ------------------------------------------------------

    @abstractmethod
    def begin_turn(self, session_id: str, prompt: str, checkpoint_id: str | None) -> int:
        """Record a turn as it starts (``clipped_prompt``), with the thread's checkpoint before
        it and the last file change before it; returns the turn's id."""

    @abstractmethod
    def turns(self, session_id: str) -> builtins.list[Turn]:
        """The session's turns, oldest first, each with the files changed from it on."""

    @abstractmethod
    def forget_turns(self, session_id: str, from_turn: int) -> None:
        """Drop turn ``from_turn`` (an id) and every later one of the session."""

    @abstractmethod
    def record_before(self, session_id: str, path: Path) -> int:
        """Keep what ``path`` (resolved) holds now, before dcode writes it; the change's id.
        Change ids grow across every session of the store."""

    @abstractmethod
    def record_after(self, change_id: int, path: Path) -> None:
        """Note what dcode left at ``path``: a rewind compares it with what is there then."""

    @abstractmethod
    def changes_since(self, session_id: str, mark: int) -> builtins.list[FileChange]: ...

    @abstractmethod
    def drop_changes(self, change_ids: Iterable[int]) -> None: ...

    @abstractmethod
    def export_records(self, session_id: str) -> SessionRecords | None:
        """The session's records (by exact id) for an export; None when there is no session."""

    @abstractmethod
    def import_records(self, records: SessionRecords) -> None:
        """Add a session's records in one transaction: all of them or none. Change ids are
        given anew (they grow across the store) and each turn's ``change_mark`` moves with
        them, so that ``turns`` counts the same files changed. Raises ``ValueError`` when the
        session's id is taken."""

    @abstractmethod
    def prune(self, *, now: float | None = None, keep_days: float = KEEP_DAYS) -> bool:
        """Forget turns and file changes older than ``keep_days`` and the kept contents nothing
        needs any more, at most once a day; True when it ran."""

    # -- threads (the checkpointer's) ---------------------------------------------------------

    @abstractmethod
    async def open_checkpointer(self) -> BaseCheckpointSaver:
        """The checkpointer the graph runs on, set up; ``aclose`` closes it."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close what ``open_checkpointer`` opened; closing twice is harmless."""

    @abstractmethod
    def close(self) -> None:
        """Let go of what the record methods keep open between calls (a pool); a store that
        opens a connection per call keeps nothing. Closing twice is harmless."""

    @abstractmethod
    def read_thread(self, thread_id: str, *, strict: bool = False) -> SavedThread | None:
        """The messages in the thread's latest checkpoint and that checkpoint's id; None when
        there is none or it cannot be read. ``strict``: a store that cannot be read raises
        ``SessionDatabaseError`` instead. Light: no engine needed (an early paint uses it)."""

    @abstractmethod
    def latest_checkpoint_id(self, thread_id: str) -> str | None: ...

    @abstractmethod
    def compaction_log(self, thread_id: str) -> builtins.list[dict[str, Any]]:
        """What the thread's compactions showed (``compaction.log``); empty when none."""

    @abstractmethod
    def task_threads(self, session_id: str, *, above: int = 0) -> builtins.list[str]:
        """The saved threads of the session's ``task`` calls numbered above ``above``, their
        nested subagents' with them (``SESSION/task/N/task/M``)."""

    # -- one process per session, and failures ------------------------------------------------

    @abstractmethod
    def hold(self, session_id: str) -> SessionHold:
        """Hold ``session_id`` for this process, or raise ``SessionHeld`` at once (never waits).
        A process that ends, however it ends, lets its sessions go."""

    @abstractmethod
    def known_damage(self) -> SessionDatabaseError | None:
        """The refusal this process settled on for the store, if it found it damaged: nothing
        is written to it any more."""

    @abstractmethod
    def refusal(self, error: BaseException) -> SessionDatabaseError | None:
        """What ``error`` (or an error it came from) means for the store, as the line to show;
        None when it is not about the store. Blocking: it may check the store."""

    @abstractmethod
    def errors(self) -> AbstractAsyncContextManager[None]:
        """Turns what the store's driver raises inside into ``SessionDatabaseError``."""
