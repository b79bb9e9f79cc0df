import sqlite3
from pathlib import Path

from dcode.agent.store.base import SessionStore, title_from_prompt
from dcode.cli.sessions import show_session
from tests.support.model_server import reply, tool_call


def test_create_record_list_delete(store: SessionStore, tmp_path: Path) -> None:
    assert store.list() == [] and store.latest() is None
    store.create("aaaa11112222", tmp_path / "one", "openai:gpt-5.1")
    store.create("bbbb11112222", tmp_path / "two", "deepseek:deepseek-chat")
    store.record_turn(
        "aaaa11112222",
        prompt="\n  Fix the failing test in parser.py\nmore",
        model="openai:gpt-5.1",
        message_count=4,
        input_tokens=100,
        output_tokens=20,
        context_tokens=120,
    )
    store.record_turn(
        "aaaa11112222",
        prompt="second prompt",
        model="openai:gpt-5.1",
        message_count=8,
        input_tokens=50,
        output_tokens=5,
        context_tokens=175,
    )
    info = store.get("aaaa")
    assert info is not None
    assert info.title == "Fix the failing test in parser.py"
    assert (info.message_count, info.input_tokens, info.output_tokens, info.context_tokens) == (
        8,
        150,
        25,
        175,
    )
    assert store.latest().id == "aaaa11112222"
    assert store.latest(cwd=tmp_path / "two").id == "bbbb11112222"
    assert [s.id for s in store.list(search="parser")] == ["aaaa11112222"]
    assert store.get("zzzz") is None
    assert store.delete("bbbb11112222") and not store.delete("bbbb11112222")
    assert [s.id for s in store.list()] == ["aaaa11112222"]


def test_ambiguous_prefix_is_not_a_match(store: SessionStore, tmp_path: Path) -> None:
    store.create("abc111", tmp_path, "m")
    store.create("abc222", tmp_path, "m")
    assert store.get("abc") is None and store.get("abc1").id == "abc111"


def test_title_is_first_nonblank_line_capped() -> None:
    assert title_from_prompt("\n\n  hello  \nworld") == "hello"
    assert len(title_from_prompt("x" * 500)) == 80


def _tables(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()


def test_start_turn_lists_a_session_by_its_prompt_at_once(
    store: SessionStore, tmp_path: Path
) -> None:
    store.create("aaaa11112222", tmp_path, "m")
    store.start_turn("aaaa11112222", prompt="first words\nmore", message_count=1)
    info = store.get("aaaa")
    assert info is not None and (info.title, info.message_count) == ("first words", 1)
    store.start_turn("aaaa11112222", prompt="second", message_count=5)
    info = store.get("aaaa")
    assert info is not None and (info.title, info.message_count) == ("first words", 5)


def test_show_reads_the_database_without_writing_to_it(make_settings, workspace: Path) -> None:
    from dcode.agent.store.sqlite import SqliteStore

    settings = make_settings()
    store = SqliteStore(settings.sessions_db, settings.home)
    store.create(
        "abcdef123456", workspace, "openai:test-model"
    )  # never run: no checkpoint tables yet
    tables = _tables(settings.sessions_db)
    shown = show_session(settings, "abcdef")
    assert "session  abcdef123456" in shown and shown.endswith("(no messages)")
    assert _tables(settings.sessions_db) == tables


async def test_show_renders_the_replayed_thread(
    server, make_settings, workspace: Path, store_kind: str
) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import TextDelta

    (workspace / "a.txt").write_text("alpha\n")
    server.script(
        reply(
            tool_calls=[
                tool_call("read_file", {"file_path": "a.txt"}),
                tool_call("execute", {"command": "ls"}),
            ]
        ),
        reply("word " * 200, chunk_size=3, chunk_delay=0.02),
    )
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        async for event in runner.run_turn("read a.txt then talk"):
            if isinstance(event, TextDelta):
                runner.cancel()
    lines = show_session(settings, runner.session_id).splitlines()
    transcript = lines[lines.index("") + 1 :]
    assert transcript[0] == "[you] read a.txt then talk"
    assert transcript[1].startswith('→ read_file({"file_path": "a.txt"})') and transcript[
        2
    ].startswith("→ execute(")
    assert "alpha" in transcript[3] and transcript[3].startswith("[tool] ")
    assert transcript[4].startswith("[tool] denied: the shell needs approval")
    assert transcript[-1].startswith("[dcode] wor") and transcript[-1].endswith("(interrupted)")


async def test_show_renders_a_tasks_subagent_under_its_call(
    server, make_settings, workspace: Path, store_kind: str
) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine

    job = "List the workspace and say what is there."
    server.script(
        reply(
            tool_calls=[tool_call("task", {"description": job, "subagent_type": "general-purpose"})]
        ).answering("look"),
        reply(tool_calls=[tool_call("ls", {"path": "."})], usage=(50, 5)).answering(job),
        reply("Nothing but a.txt.", usage=(60, 6)).answering(job),
        reply("The workspace holds a.txt.").answering("look"),
    )
    (workspace / "a.txt").write_text("alpha\n")
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        async for _ in runner.run_turn("look"):
            pass
    lines = show_session(settings, runner.session_id).splitlines()
    transcript = lines[lines.index("") + 1 :]
    assert transcript == [
        "[you] look",
        f'→ task({{"description": "{job}", "subagent_type": "general-purpose"}})',
        f"  ┌ [task:1 · general-purpose] {job}",
        '  │ → ls({"path": "."})',
        "  │ [tool] a.txt",
        "  │ [task:1] Nothing but a.txt.",
        "  └ [task:1] ok · 2 turns · 110 in / 11 out",
        "[tool] Nothing but a.txt.",
        "[dcode] The workspace holds a.txt.",
    ]
