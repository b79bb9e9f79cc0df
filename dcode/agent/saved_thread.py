"""A saved thread replayed: the events a resumed session's transcript is drawn from.

Painting a resumed transcript needs only the thread's messages, which the store reads
(``SessionStore.read_thread``) without the engine (langchain, the model client, the graph),
which takes a second or more to import: the transcript of a resumed session can be on screen
while the engine is still loading. The engine stays the authority: once it is open, the
thread's latest checkpoint id says whether what was painted is still current.

``replay`` turns the messages into the events the live stream gives, through the live stream's
own translator, so the TUI and ``dcode sessions show`` render a saved thread as they render a
turn.
"""

# Any: messages and tallies read from LangGraph checkpoint values, untyped

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dcode.agent.events import Event, ToolCallRunning, ToolStatus
    from dcode.agent.store.base import SessionStore
    from dcode.agent.stream import TurnTally

ThreadReader = Callable[[str], Sequence[Any] | None]
"""A saved thread's messages by the thread's id; None when there is no such thread."""


def thread_reader(store: SessionStore) -> ThreadReader:
    """Reads other threads of the same store (a subagent's ``SESSION/task/N``), read-only."""

    def read(thread_id: str) -> list[Any] | None:
        saved = store.read_thread(thread_id)
        return saved.messages if saved is not None else None

    return read


def replay(
    messages: Iterable[Any],
    *,
    thread_id: str = "",
    read_thread: ThreadReader | None = None,
    compactions: Sequence[dict[str, Any]] = (),
    live: bool = False,
) -> Iterator[Event]:
    """A saved thread's messages as the events the live stream gave for them: a user message,
    each answer, its tool calls and their results. A call left without a result (the process
    was killed while it ran) ends as cancelled, as the next turn would record it; ``live``: a
    run of the thread is still going (a server's, joined), and such a call is still running.

    Given the thread's id and ``read_thread``, a ``task`` call replays its subagent's thread
    too, before the call's result, as it went live: ``SubagentStarted``, the subagent's events
    tagged with its path (and its own subagents' in turn), ``SubagentFinished`` with the
    status and text of the call's result. Without them a ``task`` call replays as any call.

    ``compactions``: what the thread's compactions showed (``SessionStore.compaction_log``), replayed
    where each came, as the live stream gave it."""
    from dcode.agent.compaction.log import replayed
    from dcode.agent.stream import TurnTally

    due = sorted(replayed(list(compactions)), key=lambda found: found[0])
    yield from _replay_thread(
        list(messages),
        _Replay(thread_id, read_thread),
        (),
        thread_id,
        TurnTally(),
        due=due,
        open_calls_end=not live,
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
    open_calls_end: bool = True,
) -> Iterator[Event]:
    """One thread's events, tagged with ``path``; ``from_agent``: a subagent's thread, whose
    first user message is its task's description (``SubagentStarted`` carries it). ``due``:
    compactions' events, by the number of messages the history held when each came.
    ``open_calls_end``: a call without a result ends as cancelled (not while a run goes on)."""
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
    for running in unanswered.values() if open_calls_end else ():
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
