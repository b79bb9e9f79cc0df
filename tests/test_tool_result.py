"""A tool call's result as one typed value: saved in a real checkpoint and read back whole, and
sessions saved before the type existed replaying to the events they always gave."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import aiosqlite
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from dcode.agent.events import Event, ToolCallFinished, ToolResult, ToolStatus
from dcode.agent.saved_thread import replay
from dcode.agent.store.base import SavedThread
from dcode.agent.store.sqlite import SqliteStore
from dcode.agent.store.sqlite_saver import CheckedSaver
from dcode.agent.stream import StreamTranslator
from dcode.agent.tools.result import preview_result
from dcode.agent.tools.result_message import message_fields, read_result, saved_elsewhere
from dcode.agent.tools.spec import ToolKind, ToolSpec
from dcode.media.store import AttachmentStore
from tests.test_tui_video import window_of

DIFF = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n"


def results(store: AttachmentStore) -> dict[str, tuple[str, ToolResult]]:
    """One result of each kind a thread holds, by call id: (tool, result)."""
    return {
        "c-text": ("ls", ToolResult("a.txt\nb.txt\nc.txt\nd.txt")),
        "c-edit": ("edit_file", ToolResult("Edited a.txt: 1 replacement.", diff=DIFF)),
        "c-error": ("grep", ToolResult("grep: bad pattern", status=ToolStatus.ERROR)),
        "c-denied": ("execute", ToolResult("denied: no", status=ToolStatus.DENIED)),
        "c-cancelled": ("execute", ToolResult("cancelled: stop", status=ToolStatus.CANCELLED)),
        "c-video": ("read_file", ToolResult.of(window_of(store, [0.0, 2.0]))),
        "c-mcp": ("mcp__srv__lookup", ToolResult("found it")),
    }


def as_message(call_id: str, tool: str, result: ToolResult) -> ToolMessage:
    return ToolMessage(**message_fields(result), tool_call_id=call_id, name=tool)


async def save_thread(db: Path, messages: list[object]) -> None:
    """``messages`` saved in thread ``s`` through dcode's own checkpointer, by a graph run."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", lambda _state: {"messages": messages})
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    async with aiosqlite.connect(db) as conn:
        saver = CheckedSaver(conn, db)
        await saver.setup()
        app = graph.compile(checkpointer=saver)
        await app.ainvoke({"messages": []}, {"configurable": {"thread_id": "s"}})


def read_saved(db: Path) -> SavedThread | None:
    """Thread ``s`` as the store reads it back."""
    return SqliteStore(db, db.parent, read_only=True).read_thread("s", strict=True)


async def test_a_result_round_trips_through_a_sqlite_checkpoint(tmp_path: Path) -> None:
    made = results(AttachmentStore(tmp_path / "attachments"))
    messages = [as_message(call_id, tool, result) for call_id, (tool, result) in made.items()]
    big = as_message("c-big", "execute", ToolResult("row\n" * 50_000))
    messages.append(saved_elsewhere(big, "Tool result too large", str(tmp_path / "c-big")))
    await save_thread(tmp_path / "sessions.db", messages)

    saved = read_saved(tmp_path / "sessions.db")
    assert saved is not None
    back = {m.tool_call_id: read_result(m) for m in saved.messages if isinstance(m, ToolMessage)}
    for call_id, (_tool, result) in made.items():
        assert back[call_id] == replace(result, preview=preview_result(result.text)), call_id
    assert back["c-edit"].diff == DIFF and back["c-denied"].status is ToolStatus.DENIED
    video = back["c-video"]
    assert video.frames is not None and [f.t for f in video.frames.frames] == [0.0, 2.0]
    assert video.blocks == made["c-video"][1].blocks  # the model's content, block for block
    assert back["c-big"].saved_to == str(tmp_path / "c-big")
    assert back["c-big"].text == "Tool result too large"


def old_thread() -> list[object]:
    """Messages in the shapes sessions were saved in before results were typed: the diff as
    the artifact ``{"diff": ...}``, and dcode's marks in ``additional_kwargs``."""
    named = {"w": "write_file", "d": "execute", "x": "execute", "e": "execute", "g": "grep"}
    named["m"] = "mcp__srv__lookup"
    calls = [{"name": name, "args": {}, "id": call_id} for call_id, name in named.items()]
    return [
        HumanMessage("go"),
        AIMessage("", tool_calls=calls),
        ToolMessage(
            "Created a.txt (1 line).", tool_call_id="w", name="write_file", artifact={"diff": DIFF}
        ),
        ToolMessage(
            "denied: not now",
            tool_call_id="d",
            name="execute",
            status="error",
            additional_kwargs={"dcode_denied": True, "dcode_end_turn": True},
        ),
        ToolMessage(
            "cancelled: the user interrupted this call before it finished",
            tool_call_id="x",
            name="execute",
            status="error",
            additional_kwargs={"dcode_cancelled": True},
        ),
        ToolMessage(
            "Tool result too large for the conversation (call e). A preview:\n1\n2\n3\n4",
            tool_call_id="e",
            name="execute",
            additional_kwargs={"dcode_saved_to": "/home/u/.dcode/large_tool_results/s/e"},
        ),
        ToolMessage("grep: bad pattern", tool_call_id="g", name="grep", status="error"),
        ToolMessage([{"type": "text", "text": "found"}], tool_call_id="m", name="mcp__srv__lookup"),
    ]


def finished_json(events: Iterable[Event]) -> list[str]:
    """The finished calls as ``stream-json`` prints them (key order and all)."""
    return [json.dumps(e.to_json()) for e in events if isinstance(e, ToolCallFinished)]


async def test_an_old_session_replays_to_the_events_it_always_gave(tmp_path: Path) -> None:
    def event(call_id: str, name: str, status: str, output: str, **rest: object) -> dict:
        return {
            "type": "tool_call_finished",
            "agent": [],
            "call_id": call_id,
            "name": name,
            "status": status,
            "preview": preview_result(output),
            "output": output,
            "diff": rest.get("diff", ""),
            "frames": None,
            "saved_to": rest.get("saved_to", ""),
        }

    expected = [
        event("w", "write_file", "ok", "Created a.txt (1 line).", diff=DIFF),
        event("d", "execute", "denied", "denied: not now"),
        event(
            "x",
            "execute",
            "cancelled",
            "cancelled: the user interrupted this call before it finished",
        ),
        event(
            "e",
            "execute",
            "ok",
            "Tool result too large for the conversation (call e). A preview:\n1\n2\n3\n4",
            saved_to="/home/u/.dcode/large_tool_results/s/e",
        ),
        event("g", "grep", "error", "grep: bad pattern"),
        event("m", "mcp__srv__lookup", "ok", "found"),
    ]
    await save_thread(tmp_path / "sessions.db", old_thread())
    saved = read_saved(tmp_path / "sessions.db")
    assert saved is not None
    assert finished_json(replay(saved.messages)) == [json.dumps(e) for e in expected]
    live = StreamTranslator(None)  # the live stream reads the same messages the same way
    assert finished_json(e for m in old_thread() for e in live.on_message(m)) == [
        json.dumps(e) for e in expected
    ]
    assert (
        expected[3]["preview"]
        == "Tool result too large for the conversation (call e). A preview:\n1\n2\n… (+2 more lines)"
    )


def test_a_finished_call_shows_its_result_as_its_spec_says(monkeypatch) -> None:
    from dcode.agent.tools import spec as specs

    shout = ToolSpec("shout", ToolKind.READ, show_result=lambda text: text.upper())
    monkeypatch.setitem(specs.ALL_SPECS, "shout", shout)
    message = ToolMessage("quiet words", tool_call_id="c1", name="shout")
    assert read_result(message).preview == "QUIET WORDS"
    default = ToolMessage("a\nb\nc\nd", tool_call_id="c2", name="mcp__srv__tool")
    assert read_result(default).preview == "a\nb\nc\n… (+1 more line)"
