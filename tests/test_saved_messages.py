"""Reading a saved session's messages from its checkpoint, without the engine."""

from __future__ import annotations

from pathlib import Path

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.saved_messages import latest_checkpoint_id, read_saved_thread
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import make_settings


async def test_the_checkpoint_holds_what_the_engine_reads(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    server.script(reply("first answer"), reply("second answer"))
    settings = make_settings(dcode_home, workspace, server)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        for prompt in ("one", "two"):
            async for _event in runner.run_turn(prompt):
                pass
            if prompt == "one":
                after_one = latest_checkpoint_id(settings.sessions_db, runner.session_id)
        expected = await runner.messages()
        session_id = runner.session_id
        saved = read_saved_thread(settings.sessions_db, session_id)
        state = await engine.graph.aget_state(runner.config)
    assert saved is not None and [m.content for m in saved.messages] == ["one", "first answer", "two", "second answer"]
    assert [(m.id, m.type, m.content) for m in saved.messages] == [(m.id, m.type, m.content) for m in expected]
    # The id names the checkpoint the graph reads, and changes as the thread moves on.
    assert saved.checkpoint_id == state.config["configurable"]["checkpoint_id"]
    assert latest_checkpoint_id(settings.sessions_db, session_id) == saved.checkpoint_id != after_one
    assert read_saved_thread(settings.sessions_db, "no-such-session") is None
    assert latest_checkpoint_id(settings.sessions_db, "no-such-session") is None


def test_nothing_is_read_from_a_missing_or_broken_database(tmp_path: Path) -> None:
    assert read_saved_thread(tmp_path / "absent.db", "s") is None
    assert latest_checkpoint_id(tmp_path / "absent.db", "s") is None
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    assert read_saved_thread(broken, "s") is None
    assert latest_checkpoint_id(broken, "s") is None
    assert broken.read_bytes() == b"this is not a database" * 100  # read-only: left as it was
