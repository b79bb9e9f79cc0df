"""Rewind through the real loop: turns and file changes recorded in a real sessions.db, the
conversation forked back on the real LangGraph thread, files put back on disk."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import Notice, TurnFinished
from dcode.agent.rewind.blobs import FILE_HISTORY_DIR
from dcode.agent.store.base import SessionStore
from dcode.agent.tools.spec import EDIT_FILE, TASK, WRITE_FILE
from tests.support.model_server import reply, tool_call

pytestmark = pytest.mark.usefixtures("store_kind")  # every test, on every session store


def write(path: str, content: str):
    return tool_call(WRITE_FILE.name, {"file_path": path, "content": content})


def edit(path: str, old: str, new: str):
    return tool_call(EDIT_FILE.name, {"file_path": path, "old_string": old, "new_string": new})


async def turn(runner, prompt: str) -> list:
    events = [event async for event in runner.run_turn(prompt)]
    assert isinstance(events[-1], TurnFinished) and not events[-1].is_error, events[-1]
    return events


def texts(request) -> list[str]:
    return [text for role, text in request.transcript() if role in ("user", "assistant") and text]


async def after_three_turns(engine: Engine):
    runner = engine.runner(HeadlessApprover())
    for prompt in ("first", "second", "third"):
        await turn(runner, prompt)
    return runner


@pytest.fixture
def three_turns(server, workspace: Path):
    """Turn 1 writes a.py; turn 2 creates b.py and edits a.py; turn 3 edits a.py again."""
    (workspace / "a.py").write_text("original\n")
    server.script(
        reply(tool_calls=[write("a.py", "one\n")]),
        reply("wrote a"),
        reply(tool_calls=[write("b.py", "new file\n"), edit("a.py", "one", "two")]),
        reply("wrote b, edited a"),
        reply(tool_calls=[edit("a.py", "two", "three")]),
        reply("edited a again"),
    )
    return workspace


async def test_turns_record_their_prompt_checkpoint_and_the_files_changed_since(
    server, make_settings, three_turns: Path
) -> None:
    async with await Engine.open(make_settings()) as engine:
        runner = await after_three_turns(engine)
        turns = await runner.turns()
    assert [(t.number, t.prompt, t.files_changed) for t in turns] == [
        (1, "first", 2),
        (2, "second", 2),
        (3, "third", 1),
    ]
    assert (
        turns[0].checkpoint_id is None
        and turns[1].checkpoint_id
        and turns[2].checkpoint_id != turns[1].checkpoint_id
    )


async def test_rewinding_both_takes_the_conversation_and_the_files_back(
    server, make_settings, three_turns: Path
) -> None:
    workspace = three_turns
    async with await Engine.open(make_settings()) as engine:
        runner = await after_three_turns(engine)
        turns = await runner.turns()
        outcome = await runner.rewind(turns[1])
        assert (workspace / "a.py").read_text() == "one\n" and not (workspace / "b.py").exists()
        assert [m.content for m in await runner.messages() if m.type == "human"] == ["first"]
        assert outcome.messages_left == len(await runner.messages())
        assert outcome.lines(engine.backend.display_path)[0] == (
            f"the conversation is back to before prompt 2 ({outcome.messages_left} messages); 2 files put back: a.py, b.py deleted"
        )
        server.script(reply("fresh start"))
        await turn(runner, "instead")
        assert texts(server.requests[-1]) == ["first", "wrote a", "instead"]
        assert [t.prompt for t in await runner.turns()] == ["first", "instead"]
        info = engine.store.get(runner.session_id)
        assert (
            info is not None
            and info.title == "first"
            and info.message_count == len(await runner.messages())
        )


async def test_code_only_keeps_the_conversation_and_a_later_rewind_starts_from_the_files_as_they_are(
    server, make_settings, three_turns: Path
) -> None:
    workspace = three_turns
    async with await Engine.open(make_settings()) as engine:
        runner = await after_three_turns(engine)
        before = len(await runner.messages())
        turns = await runner.turns()
        outcome = await runner.rewind(turns[2], conversation=False)
        assert outcome.messages_left is None and len(await runner.messages()) == before
        assert (workspace / "a.py").read_text() == "two\n" and (workspace / "b.py").exists()
        assert [t.files_changed for t in await runner.turns()] == [2, 2, 0]
        again = await runner.rewind((await runner.turns())[0], conversation=False)
    assert (workspace / "a.py").read_text() == "original\n" and not (workspace / "b.py").exists()
    assert again.code is not None and sorted(p.name for p in again.code.restored) == ["a.py"]


async def test_conversation_only_keeps_the_files_and_their_changes_stay_rewindable(
    server, make_settings, three_turns: Path
) -> None:
    workspace = three_turns
    async with await Engine.open(make_settings()) as engine:
        runner = await after_three_turns(engine)
        turns = await runner.turns()
        await runner.rewind(turns[1], code=False)
        assert (workspace / "a.py").read_text() == "three\n" and (workspace / "b.py").exists()
        server.script(reply(tool_calls=[write("c.py", "c\n")]), reply("wrote c"))
        await turn(runner, "another way")
        latest = await runner.turns()
        # The files the forgotten turns changed are still put back by a rewind to before them.
        assert [(t.prompt, t.files_changed) for t in latest] == [("first", 3), ("another way", 1)]
        await runner.rewind(latest[1], conversation=False)
        assert not (workspace / "c.py").exists() and (workspace / "a.py").read_text() == "three\n"
        await runner.rewind(latest[0], conversation=False)
    assert (workspace / "a.py").read_text() == "original\n" and not (workspace / "b.py").exists()


async def test_a_file_changed_since_is_put_back_and_what_it_held_is_kept(
    server, make_settings, three_turns: Path
) -> None:
    workspace = three_turns
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        await turn(runner, "first")
        (workspace / "a.py").write_text("my own edit\n")
        outcome = await runner.rewind((await runner.turns())[0])
    assert (workspace / "a.py").read_text() == "original\n"
    assert outcome.code is not None
    [(path, copy)] = outcome.code.copies.items()
    assert path == workspace / "a.py" and copy.read_text() == "my own edit\n"
    assert (
        copy.is_relative_to(settings.home / FILE_HISTORY_DIR)
        and stat.S_IMODE(copy.stat().st_mode) == 0o600
    )
    assert any(
        "was changed since by something else" in line and str(copy) in line
        for line in outcome.lines()
    )


async def test_rewinding_to_the_first_prompt_empties_the_session(
    server, make_settings, three_turns: Path
) -> None:
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        await turn(runner, "first")
        outcome = await runner.rewind((await runner.turns())[0])
        assert outcome.messages_left == 0 and await runner.messages() == []
        assert engine.store.get(runner.session_id).title == ""
        server.script(reply("hello again"))
        await turn(runner, "a new beginning")
        assert engine.store.get(runner.session_id).title == "a new beginning"
    assert texts(server.requests[-1]) == ["a new beginning"]
    assert (three_turns / "a.py").read_text() == "original\n"


async def test_a_rewound_task_call_leaves_no_thread_for_the_next_one(
    server, make_settings, workspace: Path
) -> None:
    server.script(
        reply(
            tool_calls=[
                tool_call(
                    TASK.name,
                    {"description": "OLD JOB: write notes", "subagent_type": "general-purpose"},
                )
            ]
        ).answering("first"),
        reply(tool_calls=[write("notes.md", "by the subagent\n")]).answering("OLD JOB"),
        reply("notes written").answering("OLD JOB"),
        reply("delegated").answering("first"),
    )
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        await turn(runner, "first")
        [first] = await runner.turns()
        assert first.files_changed == 1  # the subagent's write is its session's to rewind
        outcome = await runner.rewind(first)
        assert not (workspace / "notes.md").exists() and outcome.messages_left == 0
        child = await engine.graph.aget_state(
            {"configurable": {"thread_id": f"{runner.session_id}/task/1"}}
        )
        assert not child.values
        server.script(
            reply(
                tool_calls=[
                    tool_call(
                        TASK.name, {"description": "NEW JOB", "subagent_type": "general-purpose"}
                    )
                ]
            ).answering("second"),
            reply("new job done").answering("NEW JOB"),
            reply("done").answering("second"),
        )
        await turn(runner, "second")
    new_child = next(r for r in server.requests if "NEW JOB" in str(r.body))
    assert [t for role, t in new_child.transcript() if role != "system"] == ["NEW JOB"]


async def test_the_kept_contents_are_private_and_go_with_the_session(
    server, make_settings, three_turns: Path, store: SessionStore
) -> None:
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        await turn(runner, "first")
        session_id = runner.session_id
    history = settings.home / FILE_HISTORY_DIR
    blobs = [p for p in history.rglob("*") if p.is_file()]
    assert blobs and all(stat.S_IMODE(p.stat().st_mode) == 0o400 for p in blobs)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in history.rglob("*") if p.is_dir())
    for blob in blobs:  # settled long ago: no other process can be recording a change with them
        os.utime(blob, (1, 1))
    assert store.delete(session_id)
    assert store.turns(session_id) == [] and store.changes_since(session_id, 0) == []
    assert not [p for p in history.rglob("*") if p.is_file()]


async def test_a_write_goes_ahead_when_its_content_cannot_be_kept(
    server, make_settings, three_turns: Path
) -> None:
    settings = make_settings()
    history = settings.home / FILE_HISTORY_DIR
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_text("not a directory")  # nothing can be kept under it
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        events = await turn(runner, "first")
    assert (three_turns / "a.py").read_text() == "one\n"
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert sum("/rewind will not be able to put back a.py" in n for n in notices) == 1


def test_a_huge_prompt_keeps_its_head_only(store: SessionStore) -> None:
    store.begin_turn("s1", "x" * 50_000, None)
    [kept] = store.turns("s1")
    assert (
        kept.prompt.startswith("x" * 20_000)
        and kept.prompt.endswith("[… 30,000 more characters]")
        and len(kept.prompt) < 20_100
    )


async def test_a_folder_replaced_by_a_link_since_is_left_alone(
    server, make_settings, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not dcode's\n")
    server.script(reply(tool_calls=[write("sub/keep.txt", "made by dcode\n")]), reply("made"))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        await turn(runner, "first")
        # Since, the folder became a link to somewhere else (a shell command, a checkout).
        (workspace / "sub" / "keep.txt").unlink()
        (workspace / "sub").rmdir()
        (workspace / "sub").symlink_to(outside)
        outcome = await runner.rewind((await runner.turns())[0], conversation=False)
    assert (outside / "keep.txt").read_text() == "not dcode's\n"
    assert outcome.code is not None and list(outcome.code.failed.values()) == [
        "it is now reached through a symbolic link, so it was left alone"
    ]


async def test_a_turn_that_cannot_be_noted_for_rewind_still_runs(
    server, make_settings, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(reply("answered"))

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    async with await Engine.open(make_settings()) as engine:
        monkeypatch.setattr(engine.store, "begin_turn", broken)
        runner = engine.runner(HeadlessApprover())
        events = await turn(runner, "first")
    assert events[-1].result == "answered"
    assert [e.message for e in events if isinstance(e, Notice)] == [
        "/rewind will not be able to go back to before this prompt: No space left on device"
    ]


def test_file_history_older_than_a_month_goes_once_a_day(
    store: SessionStore, workspace: Path
) -> None:
    target = workspace / "a.txt"
    target.write_text("old content\n")
    store.begin_turn("s1", "long ago", None)
    store.record_before("s1", target)
    [blob] = [p for p in (store.home / FILE_HISTORY_DIR).rglob("*") if p.is_file()]
    os.utime(blob, (1, 1))
    now = time.time()
    assert store.prune(now=now + 29 * 86400) and store.turns("s1")  # within the month: kept
    assert not store.prune(now=now + 29.5 * 86400)  # it ran less than a day ago
    assert store.prune(now=now + 31 * 86400)
    assert store.turns("s1") == [] and store.changes_since("s1", 0) == [] and not blob.exists()
