"""A resumed session's transcript entries, built from its replayed events.

The agent replays a saved thread as the events the live stream gave for them
(``dcode.agent.saved_thread.replay``), a ``task`` call's subagent included, its events tagged
with its path; this builds the entries those events leave in the transcript, a subagent's in
its task's run (``TaskRun.entries``). Only data is built here, so a long session costs a list
of small objects; the transcript mounts the last window of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dcode.agent.events import (
    AssistantMessageFinished,
    Event,
    SubagentFinished,
    SubagentStarted,
    ToolCallFinished,
    ToolCallRunning,
    UserMessage,
)
from dcode.terminal_text import safe_text
from dcode.tui.transcript.entries import AssistantEntry, Entry, TaskRun, ToolCallEntry, ToolGroupEntry, UserEntry, VideoSeen


@dataclass
class _Lane:
    """Where one agent's entries go, and the tool calls of its last answer."""

    entries: list[Entry]
    step: ToolGroupEntry | None = None
    calls: dict[str, ToolCallEntry] = field(default_factory=dict)


def entries_from_events(events: Iterable[Event]) -> list[Entry]:
    top = _Lane([])
    lanes: dict[tuple[str, ...], _Lane] = {(): top}
    runs: dict[tuple[str, ...], TaskRun] = {}
    for event in events:
        match event:
            case SubagentStarted(call_id=call_id, agent_type=agent_type, description=description, thread_id=thread_id):
                # The call that started it is in its parent's lane; its own events, in its own.
                parent = lanes.get(event.agent[:-1])
                call = parent.calls.get(call_id) if parent is not None else None
                if call is not None:
                    call.task = runs[event.agent] = TaskRun(
                        path=event.agent, agent_type=agent_type, description=description, thread_id=thread_id
                    )
                    lanes[event.agent] = _Lane(call.task.entries)
                continue
            case SubagentFinished() if (run := runs.get(event.agent)) is not None:
                run.status, run.result, run.error = event.status, event.result, event.error
                run.input_tokens, run.output_tokens = event.input_tokens, event.output_tokens
                run.num_turns, run.duration_ms = event.num_turns, event.duration_ms
                continue
        lane = lanes.get(event.agent)
        if lane is None:
            continue  # a subagent whose start is not in the replay
        match event:
            case UserMessage(text=text, videos=videos, files=files):
                lane.entries.append(UserEntry(text=text, videos=[VideoSeen(strip) for strip in videos], files=files))
                lane.step = None
            case AssistantMessageFinished(text=text, reasoning=reasoning, interrupted=interrupted):
                if text.strip() or reasoning.strip():
                    shown = AssistantEntry(text=safe_text(text), reasoning=safe_text(reasoning), interrupted=interrupted)
                    lane.entries.append(shown)
                lane.step = None
            case ToolCallRunning(call_id=call_id, name=name, args=args, summary=summary):
                if lane.step is None:
                    lane.step = ToolGroupEntry(open=False)
                    lane.entries.append(lane.step)
                call = ToolCallEntry(call_id=call_id, name=name, args=args, summary=summary)
                lane.calls[call_id] = call
                lane.step.calls.append(call)
            case ToolCallFinished(call_id=call_id, status=status, preview=preview, output=output, diff=diff, frames=frames, saved_to=saved):
                if (found := lane.calls.get(call_id)) is not None:
                    found.status, found.preview, found.output, found.diff = status, preview, output, diff
                    found.saved_to = saved
                    found.frames = VideoSeen(frames) if frames is not None else None
    return top.entries


def transcript_entries(messages: Iterable[object], *, session_id: str = "", db_path: Path | None = None) -> list[Entry]:
    """The entries for a saved thread's messages, through the agent's replay of them; with the
    session's id and database, each ``task`` call holds what its subagent did."""
    from dcode.agent.saved_thread import replay, thread_reader

    reader = thread_reader(db_path) if db_path is not None and session_id else None
    return entries_from_events(replay(messages, thread_id=session_id, read_thread=reader))
