"""The thread's messages as a DeltaChannel: the fold merges as ``add_messages`` does, a
checkpoint no longer carries the whole history, and a thread reads back the same through the
engine, through the store's ``read_thread`` and after a resume, across snapshots and from a session
saved before the change."""

from __future__ import annotations

import sqlite3
from functools import reduce
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain.agents.middleware import AgentState
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from dcode.agent import graph as graph_module
from dcode.agent import history_channel
from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.history_channel import REMOVE_ALL, fold_messages
from dcode.agent.store import open_store
from dcode.agent.tools.spec import READ_FILE
from dcode.settings.config import ApprovalMode
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import make_settings

H = HumanMessage


def _shape(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [(type(m).__name__, m.id, m.content, getattr(m, "tool_calls", None)) for m in messages]


WRITES: dict[str, list[Any]] = {
    "appends": [[H("a", id="1")], [AIMessage("b", id="2"), H("c", id="3")], H("d", id="4")],
    "replaces in place": [[H("a", id="1"), H("b", id="2"), H("c", id="3")], [H("B", id="2")]],
    "removes": [[H("a", id="1"), H("b", id="2"), H("c", id="3")], [RemoveMessage(id="2")]],
    "removed then back in one write": [
        [H("a", id="1"), H("b", id="2")],
        [RemoveMessage(id="1"), H("A", id="1")],
    ],
    "starts over": [
        [H("a", id="1"), H("b", id="2")],
        [H("x", id="9"), RemoveMessage(id=REMOVE_ALL_MESSAGES), H("c", id="3")],
        [H("d", id="4")],
    ],
    "a chunk becomes a message": [[H("a", id="1")], [AIMessageChunk(content="part", id="5")]],
    "a tool result": [
        [AIMessage("", id="a1", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])],
        [ToolMessage("out", tool_call_id="c1", id="t1")],
    ],
}


@pytest.mark.parametrize("case", sorted(WRITES))
def test_the_fold_merges_as_add_messages_does(case: str) -> None:
    writes = WRITES[case]
    expected = reduce(add_messages, writes, [])
    assert _shape(fold_messages([], writes)) == _shape(expected)
    assert [type(m) for m in fold_messages([], writes)] == [type(m) for m in expected]
    # Batching-invariant, as DeltaChannel requires: folding in two parts is folding at once.
    for cut in range(len(writes) + 1):
        assert _shape(fold_messages(fold_messages([], writes[:cut]), writes[cut:])) == _shape(
            expected
        )


def test_the_fold_refuses_what_add_messages_refuses_and_names_its_marker() -> None:
    assert REMOVE_ALL == REMOVE_ALL_MESSAGES
    with pytest.raises(
        ValueError, match=r"delete a message with an ID that doesn't exist \('nope'\)"
    ):
        add_messages([H("a", id="1")], [RemoveMessage(id="nope")])
    with pytest.raises(
        ValueError, match=r"delete a message with an ID that doesn't exist \('nope'\)"
    ):
        fold_messages([H("a", id="1")], [[RemoveMessage(id="nope")]])
    # A message without an id is given one, kept by the message, as add_messages does.
    message = H("no id")
    (folded,) = fold_messages([], [[message]])
    assert folded.id and message.id == folded.id


def _blobs(db: Path) -> list[bytes]:
    with sqlite3.connect(db) as conn:
        return [
            row[0]
            for row in conn.execute("SELECT checkpoint FROM checkpoints ORDER BY checkpoint_id")
        ]


def _stored_messages(blob: bytes) -> Any:
    return JsonPlusSerializer().loads_typed(("msgpack", blob))["channel_values"].get("messages")


def _tool_loop(steps: int) -> list[Any]:
    script = [
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.txt"})])
        for _ in range(steps)
    ]
    return [*script, reply("done")]


async def _first_turn(settings: Any) -> tuple[str, list[Any]]:
    """A new session's first turn: its id and its messages, which the saved thread reads too."""
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        async for _event in runner.run_turn("read the notes"):
            pass
        messages = await runner.messages()
    saved = open_store(settings).read_thread(runner.session_id, strict=True)
    assert saved is not None and _shape(saved.messages) == _shape(messages)
    return runner.session_id, messages


async def _resumes_and_goes_on(settings: Any, session_id: str, before: list[Any]) -> None:
    """A new engine resumes ``session_id`` with the messages ``before``, and a turn goes on from
    them; the saved thread then reads as the engine does."""
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=session_id, mode=ApprovalMode.ALL)
        assert _shape(await runner.messages()) == _shape(before)
        async for _event in runner.run_turn("and now?"):
            pass
        after = await runner.messages()
    assert _shape(after[: len(before)]) == _shape(before)
    assert [m.content for m in after[len(before) :]] == ["and now?", "second turn"]
    saved = open_store(settings).read_thread(session_id, strict=True)
    assert saved is not None and _shape(saved.messages) == _shape(after)


async def test_a_saved_thread_is_rebuilt_across_a_snapshot(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_channel, "SNAPSHOT_EVERY", 5)  # a snapshot every two steps or so
    (workspace / "notes.txt").write_text("some notes\n" * 200)
    server.script(*_tool_loop(12), reply("second turn"))
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    session_id, live = await _first_turn(settings)
    assert len(live) == 1 + 2 * 12 + 1
    blobs = _blobs(settings.sessions_db)
    stored = [_stored_messages(blob) for blob in blobs]
    snapshots = [value for value in stored if value is not None]
    # Most checkpoints hold no messages at all; a few hold a snapshot of the whole list.
    assert snapshots and len(snapshots) < len(blobs) // 3
    whole = len(JsonPlusSerializer().dumps_typed(live)[1])
    plain = [len(blob) for blob, value in zip(blobs, stored, strict=True) if value is None]
    assert max(plain) < whole // 10
    await _resumes_and_goes_on(settings, session_id, live)


async def test_a_session_saved_with_whole_lists_resumes(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "notes.txt").write_text("some notes\n")
    server.script(*_tool_loop(2), reply("second turn"))
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    with monkeypatch.context() as patch:  # the graph as it was: add_messages, the whole list stored
        patch.setattr(graph_module, "history_state", lambda: AgentState)
        session_id, before = await _first_turn(settings)
    assert _shape(_stored_messages(_blobs(settings.sessions_db)[-1])) == _shape(before)
    await _resumes_and_goes_on(settings, session_id, before)


class _Counted(HumanMessage):
    """A message that counts how often its id is read: the work a fold does per message."""

    reads: ClassVar[list[int]] = [0]

    def __getattribute__(self, name: str) -> Any:
        if name == "id":
            _Counted.reads[0] += 1
        return super().__getattribute__(name)


def test_a_rebuild_reads_each_message_of_a_long_history_a_bounded_number_of_times() -> None:
    # A snapshot's worth of one-message writes folded into a long history, as every load of a
    # long thread does: the fold's work is the history plus the writes, not their product.
    history = [_Counted(f"m{i}", id=f"m{i}") for i in range(3_000)]
    writes = [[_Counted(f"n{i}", id=f"n{i}")] for i in range(100)]
    _Counted.reads[0] = 0
    folded = fold_messages(history, writes)
    assert _Counted.reads[0] < 3 * (len(history) + len(writes))
    assert _shape(folded) == _shape(reduce(add_messages, writes, history))


def test_a_live_run_folding_step_after_step_does_not_read_the_history_again() -> None:
    # A live run folds each step's writes into the previous fold's result: a thousand-turn
    # session's step must not walk (hash) its whole history again, step after step.
    state = fold_messages([_Counted(f"m{i}", id=f"m{i}") for i in range(3_000)], [])
    steps = [[_Counted(f"n{i}", id=f"n{i}")] for i in range(100)]
    _Counted.reads[0] = 0
    expected = reduce(add_messages, steps, list(state))
    _Counted.reads[0] = 0
    for step in steps:
        state = fold_messages(state, [step])
    assert _Counted.reads[0] < 20 * len(steps)
    assert _shape(state) == _shape(expected)


def test_a_fold_result_changed_in_place_is_indexed_again() -> None:
    # A channel's value is not meant to change once handed out; if one is changed after all,
    # the fold must not trust the index it kept for it.
    state = fold_messages([], [[H("a", id="1"), H("b", id="2")]])
    state.append(H("c", id="3"))
    state[0] = H("z", id="9")
    folded = fold_messages(state, [[H("C", id="3"), RemoveMessage(id="9")]])
    assert _shape(folded) == _shape([H("b", id="2"), H("C", id="3")])


def test_a_long_fold_with_removals_and_replacements_merges_as_add_messages_does() -> None:
    # After a removal the indexes of the later messages move: a replacement of one of them in a
    # later write must land on that message, not on the slot it had before.
    history = [H(f"m{i}", id=f"m{i}") for i in range(2_000)]
    writes: list[Any] = [
        [RemoveMessage(id="m10"), RemoveMessage(id="m500")],
        [H("M1999", id="m1999"), H("M11", id="m11")],
        [AIMessage("new", id="a1"), RemoveMessage(id="m0")],
        H("M501", id="m501"),
        [H("again", id="m10")],  # a removed id comes back: appended, as add_messages does
        [RemoveMessage(id="a1"), H("M12", id="m12")],
    ]
    expected = reduce(add_messages, writes, history)
    assert _shape(fold_messages(history, writes)) == _shape(expected)
    for cut in range(len(writes) + 1):
        assert _shape(fold_messages(fold_messages(history, writes[:cut]), writes[cut:])) == _shape(
            expected
        )
    # Everything after the marker in one write is taken as it is, and later writes merge into it.
    restart: list[Any] = [
        [H("x", id="x"), RemoveMessage(id=REMOVE_ALL_MESSAGES), H("y", id="y"), H("z", id="z")],
        [H("Y", id="y")],
    ]
    assert _shape(fold_messages(history, restart)) == _shape(reduce(add_messages, restart, history))
