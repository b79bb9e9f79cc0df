"""A resumed session's transcript entries, built from its replayed events.

The agent replays a saved thread as the events the live stream gave for it
(``dcode.agent.saved_thread.replay``); this builds the entries those events leave in the
transcript. Only data is built here, so a long session costs a list of small objects; the
transcript mounts the last window of it.
"""

from __future__ import annotations

from collections.abc import Iterable

from dcode.agent.events import AssistantMessageFinished, Event, ToolCallFinished, ToolCallRunning, UserMessage
from dcode.tui.transcript.entries import AssistantEntry, Entry, ToolCallEntry, ToolGroupEntry, UserEntry, VideoSeen


def entries_from_events(events: Iterable[Event]) -> list[Entry]:
    entries: list[Entry] = []
    calls: dict[str, ToolCallEntry] = {}
    step: ToolGroupEntry | None = None  # the tool calls of the last answer
    for event in events:
        match event:
            case UserMessage(text=text, videos=videos):
                entries.append(UserEntry(text=text, videos=[VideoSeen(strip) for strip in videos]))
                step = None
            case AssistantMessageFinished(text=text, reasoning=reasoning, interrupted=interrupted):
                if text.strip() or reasoning.strip():
                    entries.append(AssistantEntry(text=text, reasoning=reasoning, interrupted=interrupted))
                step = None
            case ToolCallRunning(call_id=call_id, name=name, args=args, summary=summary):
                if step is None:
                    step = ToolGroupEntry(open=False)
                    entries.append(step)
                call = ToolCallEntry(call_id=call_id, name=name, args=args, summary=summary)
                calls[call_id] = call
                step.calls.append(call)
            case ToolCallFinished(call_id=call_id, status=status, preview=preview, output=output, diff=diff, frames=frames, saved_to=saved):
                if (found := calls.get(call_id)) is not None:
                    found.status, found.preview, found.output, found.diff = status, preview, output, diff
                    found.saved_to = saved
                    found.frames = VideoSeen(frames) if frames is not None else None
    return entries


def transcript_entries(messages: Iterable[object]) -> list[Entry]:
    """The entries for a saved thread's messages, through the agent's replay of them."""
    from dcode.agent.saved_thread import replay

    return entries_from_events(replay(messages))
