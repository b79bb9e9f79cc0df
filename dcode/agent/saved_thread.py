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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dcode.agent.events import Event, ToolCallRunning, ToolStatus
    from dcode.agent.stream import TurnTally

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
        return sqlite3.connect(
            f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=1, check_same_thread=False
        )
    except sqlite3.Error:
        return None


def read_saved_thread(
    db_path: Path, session_id: str, *, strict: bool = False
) -> SavedThread | None:
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
                raise SessionDatabaseError(
                    db_path, f"no {' or '.join(missing)} table", damaged=True
                )
            saver = SqliteSaver(conn)
            saved = saver.get_tuple(
                {"configurable": {"thread_id": session_id, "checkpoint_ns": ""}}
            )
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
    """Delete ``session_id``'s checkpoints and pending writes, its subagents' threads with them,
    in the caller's transaction (so the session's own record goes with them). Tables the
    checkpointer has not created yet are skipped."""
    missing = _missing_tables(conn)
    for table in CHECKPOINT_SCHEMA:
        if table not in missing:
            # Its subagents' threads (``SESSION/task/N``, nested ones too) go with it.
            conn.execute(
                f"DELETE FROM {table} WHERE thread_id = ? OR substr(thread_id, 1, ?) = ?",
                (session_id, len(session_id) + 6, f"{session_id}/task/"),
            )


def delete_task_threads(conn: sqlite3.Connection, session_id: str, *, above: int) -> int:
    """Delete the threads of ``session_id``'s ``task`` calls numbered above ``above`` (their
    nested subagents' too), in the caller's transaction; returns how many threads went. A
    rewound conversation numbers its next ``task`` call from where it stands again, and that
    call must start a thread of its own, not continue one the rewind took away."""
    prefix = f"{session_id}/task/"
    doomed: set[str] = set()
    missing = _missing_tables(conn)
    for table in CHECKPOINT_SCHEMA:
        if table in missing:
            continue
        for (thread_id,) in conn.execute(
            f"SELECT DISTINCT thread_id FROM {table} WHERE substr(thread_id, 1, ?) = ?",
            (len(prefix), prefix),
        ):
            number = str(thread_id)[len(prefix) :].partition("/")[0]
            if number.isdigit() and int(number) > above:
                doomed.add(str(thread_id))
        conn.executemany(
            f"DELETE FROM {table} WHERE thread_id = ?",
            [(thread_id,) for thread_id in sorted(doomed)],
        )
    return len(doomed)


ThreadReader = Callable[[str], Sequence[Any] | None]
"""A saved thread's messages by the thread's id; None when there is no such thread."""


def thread_reader(db_path: Path) -> ThreadReader:
    """Reads other threads of the same database (a subagent's ``SESSION/task/N``), read-only."""

    def read(thread_id: str) -> list[Any] | None:
        saved = read_saved_thread(db_path, thread_id)
        return saved.messages if saved is not None else None

    return read


def read_compaction_log(db_path: Path, session_id: str) -> list[dict[str, Any]]:
    """What the compactions of ``session_id`` showed (``compaction.log``), from its latest
    checkpoint, which holds them whole: a small read beside the messages'. None, unreadable or
    never compacted: an empty list."""
    from dcode.agent.compaction.log import log_of

    conn = open_read_only(db_path)
    if conn is None:
        return []
    from langgraph.checkpoint.sqlite import SqliteSaver

    try:
        if _missing_tables(conn):
            return []
        saved = SqliteSaver(conn).get_tuple(
            {"configurable": {"thread_id": session_id, "checkpoint_ns": ""}}
        )
        return (
            log_of(saved.checkpoint.get("channel_values", {}).get("compaction"))
            if saved is not None
            else []
        )
    except Exception:  # noqa: BLE001 - the transcript is shown without those lines
        return []
    finally:
        conn.close()


def replay(
    messages: Iterable[Any],
    *,
    thread_id: str = "",
    read_thread: ThreadReader | None = None,
    compactions: Sequence[dict[str, Any]] = (),
) -> Iterator[Event]:
    """A saved thread's messages as the events the live stream gave for them: a user message,
    each answer, its tool calls and their results. A call left without a result (the process
    was killed while it ran) ends as cancelled, as the next turn would record it.

    Given the thread's id and ``read_thread``, a ``task`` call replays its subagent's thread
    too, before the call's result, as it went live: ``SubagentStarted``, the subagent's events
    tagged with its path (and its own subagents' in turn), ``SubagentFinished`` with the
    status and text of the call's result. Without them a ``task`` call replays as any call.

    ``compactions``: what the thread's compactions showed (``read_compaction_log``), replayed
    where each came, as the live stream gave it."""
    from dcode.agent.compaction.log import replayed
    from dcode.agent.stream import TurnTally

    due = sorted(replayed(list(compactions)), key=lambda found: found[0])
    yield from _replay_thread(
        list(messages), _Replay(thread_id, read_thread), (), thread_id, TurnTally(), due=due
    )


@dataclass(frozen=True)
class _Replay:
    thread_id: str
    read_thread: ThreadReader | None

    @property
    def follows_tasks(self) -> bool:
        return bool(self.thread_id) and self.read_thread is not None


def _replay_thread(
    messages: list[Any],
    how: _Replay,
    path: tuple[str, ...],
    thread_id: str,
    tally: Any,
    *,
    from_agent: bool = False,
    due: list[tuple[int, list[Event]]] | None = None,
) -> Iterator[Event]:
    """One thread's events, tagged with ``path``; ``from_agent``: a subagent's thread, whose
    first user message is its task's description (``SubagentStarted`` carries it). ``due``:
    compactions' events, by the number of messages the history held when each came."""
    from dcode.agent.events import (
        ToolCallFinished,
        ToolCallRunning,
        ToolResult,
        ToolStatus,
        UserMessage,
    )
    from dcode.agent.stream import StreamTranslator
    from dcode.agent.tools.spec import TASK

    translator = StreamTranslator(None, tally=tally)
    unanswered: dict[str, ToolCallRunning] = {}
    skip_description = from_agent
    due = list(due or ())
    for index, message in enumerate(messages):
        while due and due[0][0] <= index:
            yield from due.pop(0)[1]
        for event in translator.on_message(message):
            match event:
                case UserMessage() if skip_description:
                    skip_description = False
                    continue
                case ToolCallRunning(call_id=call_id):
                    unanswered[call_id] = event
                case ToolCallFinished(call_id=call_id, result=result):
                    running = unanswered.pop(call_id, None)
                    if running is not None and running.name == TASK.name and how.follows_tasks:
                        yield from _replay_task(
                            messages,
                            how,
                            path,
                            thread_id,
                            running,
                            result.status,
                            result.text,
                            tally,
                        )
            yield event.from_agent(path)
    for running in unanswered.values():
        if running.name == TASK.name and how.follows_tasks:
            yield from _replay_task(
                messages, how, path, thread_id, running, ToolStatus.CANCELLED, "no result", tally
            )
        unfinished = ToolResult("", status=ToolStatus.CANCELLED, preview="no result")
        yield ToolCallFinished(running.call_id, running.name, unfinished, agent=path)
    for _at, events in due:
        yield from events


def _replay_task(
    messages: list[Any],
    how: _Replay,
    path: tuple[str, ...],
    thread_id: str,
    call: ToolCallRunning,
    status: ToolStatus,
    result: str,
    tally: TurnTally,
) -> Iterator[Event]:
    """A ``task`` call's subagent, from its own thread; nothing when that thread is not saved.
    ``status`` and ``result``: the call's, which are what the subagent returned."""
    from dcode.agent.events import SubagentFinished, SubagentStarted, ToolStatus
    from dcode.agent.stream import TurnTally
    from dcode.agent.subagents.threads import call_number, task_path, task_thread
    from dcode.agent.tools.args import GENERAL_PURPOSE

    assert how.read_thread is not None
    number = call_number(messages, call.call_id)
    child_thread, child_path = task_thread(thread_id, number), task_path(path, number)
    child_messages = how.read_thread(child_thread)
    if not child_messages:
        return
    args = call.args
    yield SubagentStarted(
        call.call_id,
        str(args.get("subagent_type") or GENERAL_PURPOSE),
        str(args.get("description") or ""),
        child_thread,
        agent=child_path,
    )
    child = TurnTally()
    yield from _replay_thread(
        list(child_messages), how, child_path, child_thread, child, from_agent=True
    )
    # The parent's figures hold its subagents', as a live turn's do.
    tally.subagent_input_tokens += child.all_input_tokens
    tally.subagent_output_tokens += child.all_output_tokens
    tally.subagent_cached_tokens += child.all_cached_tokens
    ok = status is ToolStatus.OK
    yield SubagentFinished(
        call.call_id,
        status,
        result if ok else "",
        num_turns=child.num_turns,
        input_tokens=child.all_input_tokens,
        output_tokens=child.all_output_tokens,
        cached_tokens=child.all_cached_tokens,
        error="" if ok else result,
        agent=child_path,
    )
