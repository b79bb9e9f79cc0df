"""The checkpointer's serializer remembers what it decoded: a long thread's snapshot is decoded
once in a process, however often the thread is loaded, and each load still gets containers of
its own (LangGraph updates a loaded checkpoint in place)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from dcode.agent import history_channel
from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.store import open_store
from dcode.agent.store.checkpoint_memo import (
    SMALLEST,
    RememberingHistories,
    RememberingSerializer,
    fresh_containers,
)
from dcode.agent.tools.spec import READ_FILE
from dcode.settings.config import ApprovalMode
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.support.stores import configured
from tests.test_tui_app_support import make_settings


class Pair(NamedTuple):
    left: Any
    right: Any


def test_each_copy_has_its_own_containers_around_the_same_leaves() -> None:
    leaf = HumanMessage("kept", id="1")
    value = {"a": [leaf, {"b": {3, 4}}], "c": Pair([1], (leaf, [2])), "d": "text", "e": None}
    copy = fresh_containers(value)
    assert copy == value and copy is not value
    assert (
        copy["a"] is not value["a"]
        and copy["a"][1] is not value["a"][1]
        and copy["a"][1]["b"] is not value["a"][1]["b"]
    )
    assert (
        type(copy["c"]) is Pair
        and copy["c"].left is not value["c"].left
        and copy["c"].right[1] is not value["c"].right[1]
    )
    assert copy["a"][0] is leaf and copy["c"].right[0] is leaf  # the messages themselves are shared
    copy["a"].append("more")
    copy["a"][1]["b"].add(5)
    copy["c"].left.append(9)
    assert value == {
        "a": [leaf, {"b": {3, 4}}],
        "c": Pair([1], (leaf, [2])),
        "d": "text",
        "e": None,
    }


def _blob(serializer: JsonPlusSerializer, value: Any) -> tuple[str, bytes]:
    kind, blob = serializer.dumps_typed(value)
    assert len(blob) >= SMALLEST
    return kind, blob


def _history(n: int, tag: str = "") -> dict[str, Any]:
    return {
        "channel_values": {
            "messages": [
                HumanMessage(f"{tag}message {i} " + "x" * 200, id=f"{tag}{i}") for i in range(n)
            ]
        },
        "versions": {"a": 1},
    }


def test_a_blob_is_decoded_once_and_each_load_gets_its_own_dicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serializer = RememberingSerializer()
    data = _blob(serializer, _history(200))
    decoded = Counter[bytes]()
    original = JsonPlusSerializer.loads_typed

    def counting(self: JsonPlusSerializer, data: tuple[str, bytes]) -> Any:
        decoded[data[1]] += 1
        return original(self, data)

    monkeypatch.setattr(JsonPlusSerializer, "loads_typed", counting)
    first = serializer.loads_typed(data)
    first["channel_values"]["messages"].pop()  # as LangGraph may change what it loaded
    first["versions"]["a"] = 2
    second = serializer.loads_typed((data[0], bytes(data[1])))  # the same bytes, read again
    assert decoded[data[1]] == 1
    assert len(second["channel_values"]["messages"]) == 200 and second["versions"] == {"a": 1}
    assert second["channel_values"]["messages"][0] is first["channel_values"]["messages"][0]
    assert [m.content for m in second["channel_values"]["messages"]] == [
        m.content for m in original(serializer, data)["channel_values"]["messages"]
    ]


def test_the_latest_checkpoints_are_kept_within_their_count_and_budget() -> None:
    serializer = RememberingSerializer(entries=3, budget=10 * 80_000)
    blobs = [_blob(serializer, _history(200, tag=f"t{n}-")) for n in range(6)]
    assert all(60_000 < len(blob) < 80_000 for _, blob in blobs)
    for data in blobs:
        serializer.loads_typed(data)
    assert serializer.remembered == 3
    by_budget = RememberingSerializer(entries=10, budget=2 * 80_000)
    for data in blobs:
        by_budget.loads_typed(data)
    assert by_budget.remembered == 2
    assert by_budget.loads_typed(blobs[-1])["channel_values"]["messages"][0].id == "t5-0"


def test_only_a_large_checkpoint_is_remembered() -> None:
    serializer = RememberingSerializer()
    serializer.loads_typed(serializer.dumps_typed({"channel_values": {}, "a": 1}))  # small
    write = _blob(serializer, _history(200)["channel_values"]["messages"])  # a step's messages
    assert serializer.loads_typed(write)[0].id == "0"
    assert serializer.remembered == 0


def test_a_serializer_derived_for_more_types_remembers_on_its_own() -> None:
    strict = RememberingSerializer(allowed_msgpack_modules=None)
    data = _blob(strict, _history(100))
    strict.loads_typed(data)
    derived = strict.with_msgpack_allowlist([("tests.test_checkpoint_memo", "Pair")])
    assert derived is not strict and isinstance(derived, RememberingSerializer)
    assert strict.remembered == 1 and derived.remembered == 0
    derived.loads_typed(data)
    assert derived.remembered == 1


async def test_a_long_thread_is_decoded_once_however_often_it_is_loaded(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A thread whose snapshots hold more than the serializer keeps small: each load of it (the
    # runner settles it before a turn, the graph loads it, the runner counts it after) decoded
    # every snapshot again.
    monkeypatch.setattr(history_channel, "SNAPSHOT_EVERY", 5)
    (workspace / "notes.txt").write_text("a line of notes, long enough to count\n" * 300)
    server.script(
        *[
            reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.txt"})])
            for _ in range(6)
        ],
        reply("done"),
    )
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        async for _event in runner.run_turn("read the notes"):
            pass
        session_id = runner.session_id
    decoded = Counter[bytes]()
    original = JsonPlusSerializer.loads_typed

    def counting(self: JsonPlusSerializer, data: tuple[str, bytes]) -> Any:
        value = original(self, data)
        if len(data[1]) >= SMALLEST and isinstance(value, dict) and "channel_values" in value:
            decoded[data[1]] += 1  # a snapshot of the history
        return value

    monkeypatch.setattr(JsonPlusSerializer, "loads_typed", counting)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=session_id, mode=ApprovalMode.ALL)
        loads = [await runner.messages() for _ in range(3)]
    assert decoded, "the thread has no snapshot large enough to be remembered"
    assert max(decoded.values()) == 1, f"a snapshot was decoded {max(decoded.values())} times"
    # Each load is a list of its own, of the messages a fresh read finds.
    assert loads[0] is not loads[1] and loads[0] == loads[1] == loads[2]
    loads[0].clear()
    saved = open_store(settings).read_thread(session_id, strict=True)
    assert saved is not None and [(type(m), m.id, m.content) for m in saved.messages] == [
        (type(m), m.id, m.content) for m in loads[1]
    ]
    assert isinstance(loads[1][-1], AIMessage) and loads[1][-1].content == "done"


async def test_a_turn_reads_its_thread_from_the_database_once(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Settling the thread before the turn, the graph's own load and the count after it each
    # rebuilt the history from the database: three reads of the whole thread a turn; then one,
    # the count after it, at a checkpoint the memory had not seen.
    (workspace / "notes.txt").write_text("notes\n")
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.txt"})]),
        reply("first"),
        reply("second"),
    )
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    reads: list[str] = []
    original = AsyncSqliteSaver.aget_delta_channel_history

    async def counting(self: AsyncSqliteSaver, *, config: Any, channels: Any) -> Any:
        reads.append(config["configurable"]["thread_id"])
        return await original(self, config=config, channels=channels)

    monkeypatch.setattr(AsyncSqliteSaver, "aget_delta_channel_history", counting)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        async for _event in runner.run_turn("read the notes"):
            pass
        reads.clear()
        async for _event in runner.run_turn("and again"):
            pass
        # The turn's own steps and the count after it carry the last turn's history forward.
        assert reads == [], reads
        live = await runner.messages()
        assert reads == []  # the head the count read: nothing new
    saved = open_store(settings).read_thread(runner.session_id, strict=True)
    assert saved is not None and [(type(m), m.id, m.content) for m in saved.messages] == [
        (type(m), m.id, m.content) for m in live
    ]
    assert [m.content for m in live[-2:]] == ["and again", "second"]


def _messages_in(value: Any) -> int:
    if isinstance(value, BaseMessage):
        return 1
    if isinstance(value, dict):
        return sum(_messages_in(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_messages_in(item) for item in value)
    return 0


async def test_a_turn_decodes_as_much_of_a_long_thread_as_of_a_short_one(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    store_kind: str,
) -> None:
    # Each turn ends on a new checkpoint, and the count after it rebuilt that checkpoint's
    # history from the database: every message written since the last snapshot decoded again,
    # a turn's cost growing with the thread. Without snapshots, that is the whole thread.
    monkeypatch.setattr(history_channel, "SNAPSHOT_EVERY", 100_000)
    server.script(*[reply(f"answer {n}") for n in range(4)])
    settings = configured(
        make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL), store_kind
    )
    decoded = 0
    original = JsonPlusSerializer.loads_typed

    def counting(self: JsonPlusSerializer, data: tuple[str, bytes]) -> Any:
        nonlocal decoded
        value = original(self, data)
        decoded += _messages_in(value)
        return value

    monkeypatch.setattr(JsonPlusSerializer, "loads_typed", counting)
    per_turn: list[int] = []
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        for size in (100, 1000):
            while len(await runner.messages()) < size:  # notes, 50 a checkpoint
                notes = [HumanMessage(f"note {n}") for n in range(50)]
                await engine.graph.aupdate_state(
                    runner.config, {"messages": notes}, as_node="model"
                )
            async for _event in runner.run_turn("first"):
                pass
            decoded = 0
            async for _event in runner.run_turn("second"):
                pass
            per_turn.append(decoded)
        live = await runner.messages()
    assert per_turn[0] == per_turn[1] > 0, per_turn
    assert len(live) >= 1000 and [m.content for m in live[-2:]] == ["second", "answer 3"]
    saved = open_store(settings).read_thread(runner.session_id, strict=True)
    assert saved is not None and [(type(m), m.id, m.content) for m in saved.messages] == [
        (type(m), m.id, m.content) for m in live
    ]


async def test_a_history_carried_forward_is_the_one_read_from_the_database(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    store_kind: str,
) -> None:
    # Every checkpoint of a thread with snapshots, tool calls, a note, a rewind and turns after
    # it, asked for oldest first (so that each is carried forward from the one before where it
    # can be): the same history as the checkpointer's own read of it.
    monkeypatch.setattr(history_channel, "SNAPSHOT_EVERY", 4)
    (workspace / "notes.txt").write_text("notes\n")
    server.script(
        *[
            step
            for n in range(5)
            for step in (
                reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.txt"})]),
                reply(f"answer {n}"),
            )
        ]
    )
    settings = configured(
        make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL), store_kind
    )
    carried: list[bool] = []
    original = RememberingHistories._carried_forward

    async def counting(self: RememberingHistories, config: Any, kept: Any) -> Any:
        history = await original(self, config, kept)
        carried.append(history is not None)
        return history

    monkeypatch.setattr(RememberingHistories, "_carried_forward", counting)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        for n in range(3):
            async for _event in runner.run_turn(f"turn {n}"):
                pass
        await runner.add_user_note("a note")
        await runner.rewind((await runner.turns())[1], code=False)
        for n in range(3, 5):
            async for _event in runner.run_turn(f"turn {n}"):
                pass
        saver = engine.checkpointer
        assert isinstance(saver, RememberingHistories)
        thread = {"configurable": {"thread_id": runner.session_id}}
        ids = sorted([saved.config async for saved in saver.alist(thread)], key=_checkpoint_id)
        assert len(ids) > 30
        carried.clear()
        for config in ids:
            remembered = await saver.aget_delta_channel_history(
                config=config, channels=["messages"]
            )
            read = await super(RememberingHistories, saver).aget_delta_channel_history(
                config=config, channels=["messages"]
            )
            assert remembered == read, _checkpoint_id(config)
    # Most were carried forward; those after a snapshot, or after a checkpoint of the other
    # branch, were read whole.
    assert carried.count(True) > len(ids) / 2 and not all(carried), carried


def _checkpoint_id(config: Any) -> str:
    return str(config["configurable"]["checkpoint_id"])
