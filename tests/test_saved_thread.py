"""Reading a saved thread without the engine: its messages, its replay as the live stream's
events, and its deletion, on every session store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.agent.approval import ApprovalDecision, HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import (
    ApprovalRequested,
    AssistantMessageFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolResult,
    ToolStatus,
    TurnFinished,
    UserMessage,
)
from dcode.agent.saved_thread import replay
from dcode.agent.store.base import SessionStore
from dcode.agent.store.sqlite import SqliteStore
from dcode.settings.config import ApprovalMode
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.support.stores import configured
from tests.test_tui_app_support import make_settings

HEAVY = (
    "dcode.agent.engine",
    "dcode.agent.middleware",
    "langchain.agents",
    "langchain_openai",
    "openai",
    "langgraph.pregel",
    "textual",
)


async def test_the_checkpoint_holds_what_the_engine_reads(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    store: SessionStore,
    store_kind: str,
) -> None:
    server.script(reply("first answer"), reply("second answer"))
    settings = configured(make_settings(dcode_home, workspace, server), store_kind)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        for prompt in ("one", "two"):
            async for _event in runner.run_turn(prompt):
                pass
            if prompt == "one":
                after_one = store.latest_checkpoint_id(runner.session_id)
        expected = await runner.messages()
        session_id = runner.session_id
        saved = store.read_thread(session_id)
        state = await engine.graph.aget_state(runner.config)
    assert saved is not None and [m.content for m in saved.messages] == [
        "one",
        "first answer",
        "two",
        "second answer",
    ]
    assert [(m.id, m.type, m.content) for m in saved.messages] == [
        (m.id, m.type, m.content) for m in expected
    ]
    # The id names the checkpoint the graph reads, and changes as the thread moves on.
    assert saved.checkpoint_id == state.config["configurable"]["checkpoint_id"]
    assert store.latest_checkpoint_id(session_id) == saved.checkpoint_id != after_one
    assert store.read_thread("no-such-session") is None
    assert store.latest_checkpoint_id("no-such-session") is None


def test_nothing_is_read_from_a_missing_or_broken_database(tmp_path: Path) -> None:
    absent = SqliteStore(tmp_path / "absent.db", tmp_path)
    assert absent.read_thread("s") is None and absent.latest_checkpoint_id("s") is None
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    assert SqliteStore(broken, tmp_path).read_thread("s") is None
    assert SqliteStore(broken, tmp_path).latest_checkpoint_id("s") is None
    assert broken.read_bytes() == b"this is not a database" * 100  # read-only: left as it was


class Refuses:
    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        return ApprovalDecision(False, "not that file")


def complete(events: list) -> list:
    """The events a complete message gives (what a replay can say), in order."""
    return [
        e
        for e in events
        if isinstance(e, (AssistantMessageFinished, ToolCallRunning, ToolCallFinished))
    ]


async def test_a_replay_says_what_the_live_stream_said(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    server.script(
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": "b.txt", "content": "x"}),
                tool_call("read_file", {"file_path": "a.txt"}),
            ]
        ),
        reply(
            tool_calls=[tool_call("read_file", {"file_path": "missing.txt"})],
            reasoning="the other file, then",
        ),
        reply("Done: a.txt says alpha.", reasoning="wrap up"),
    )
    settings = make_settings(dcode_home, workspace, server)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(Refuses(), mode=ApprovalMode.MANUAL)
        live = [event async for event in runner.run_turn("look at the files")]
    saved = engine.store.read_thread(runner.session_id)
    assert saved is not None
    replayed = list(replay(saved.messages))
    assert replayed[0] == UserMessage("look at the files")
    assert complete(replayed) == complete(live)
    statuses = [e.result.status for e in complete(replayed) if isinstance(e, ToolCallFinished)]
    assert statuses == [ToolStatus.DENIED, ToolStatus.OK, ToolStatus.ERROR]
    answers = [e for e in replayed if isinstance(e, AssistantMessageFinished)]
    assert answers[-1].text == "Done: a.txt says alpha." and answers[-1].reasoning == "wrap up"


async def test_an_interrupted_answer_and_a_call_without_result_replay_as_such(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    server.script(reply("word " * 300, chunk_size=3, chunk_delay=0.02))
    settings = make_settings(dcode_home, workspace, server)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        streamed = ""
        async for event in runner.run_turn("talk"):
            if isinstance(event, TextDelta):
                streamed += event.text
                runner.cancel()
            if isinstance(event, TurnFinished):
                assert event.interrupted
    saved = engine.store.read_thread(runner.session_id)
    assert saved is not None
    [answer] = [e for e in replay(saved.messages) if isinstance(e, AssistantMessageFinished)]
    assert answer.interrupted and answer.text == streamed and streamed
    # A process killed while a call ran leaves it without a result.
    killed = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {"path": "."}, "id": "c1"}]),
    ]
    assert list(replay(killed))[-1] == ToolCallFinished(
        "c1", "ls", ToolResult("", status=ToolStatus.CANCELLED, preview="no result")
    )
    answered = [*killed, ToolMessage("a.txt", tool_call_id="c1", name="ls")]
    assert [e.result.status for e in replay(answered) if isinstance(e, ToolCallFinished)] == [
        ToolStatus.OK
    ]


async def test_a_replay_loads_nothing_of_the_engine(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """A resumed transcript is painted while the engine loads: reading and replaying a thread
    must not import the engine's heavy modules."""
    server.script(reply(tool_calls=[tool_call("ls", {"path": "."})]), reply("listed"))
    settings = make_settings(dcode_home, workspace, server)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        async for _ in runner.run_turn("list"):
            pass
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from dcode.agent.saved_thread import replay\n"
        "from dcode.agent.store import open_store\n"
        "from dcode.settings.config import Settings\n"
        f"store = open_store(Settings(home=Path({str(settings.home)!r}), workspace=Path('.')))\n"
        f"saved = store.read_thread({runner.session_id!r})\n"
        "print(len(list(replay(saved.messages))))\n"
        f"print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))\n"
    )
    result = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    count, loaded = result.stdout.splitlines()
    assert int(count) >= 5 and loaded == "[]"


async def test_deleting_a_session_leaves_nothing_of_its_thread(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    store: SessionStore,
    store_kind: str,
) -> None:
    server.script(
        reply(tool_calls=[tool_call("ls", {"path": "."})]), reply("listed"), reply("kept")
    )
    settings = configured(make_settings(dcode_home, workspace, server), store_kind)
    async with await Engine.open(settings) as engine:
        gone, kept = engine.runner(HeadlessApprover()), engine.runner(HeadlessApprover())
        for runner in (gone, kept):
            async for _ in runner.run_turn("go"):
                pass
        assert await engine.checkpointer.aget_tuple(gone.config) is not None
    assert store.delete(gone.session_id) and store.get(gone.session_id) is None
    async with await Engine.open(settings) as engine:
        # Through the checkpointer's own API: no checkpoint of the thread is left.
        assert [c async for c in engine.checkpointer.alist(gone.config)] == []
        assert [c async for c in engine.checkpointer.alist(kept.config)] != []
    assert store.read_thread(gone.session_id) is None
    assert store.read_thread(kept.session_id) is not None
