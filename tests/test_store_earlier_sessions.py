"""A sessions.db written before the store interface (dcode at 16450db) reads and goes on as it
did: the list and its figures, the transcript with its subagent, the turns ``/rewind`` offers,
a resumed turn, a rewind and a deletion.

``tests/fixtures/sessions_before_store/sessions.db`` was made by that dcode's own engine against
the scripted model server: session ``0ld5e5510n01``, whose first prompt wrote ``notes.md`` and
whose second had a ``task`` subagent read it (580 tokens in, 58 out, 90 of them in by the
subagent).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import TurnFinished
from dcode.agent.store.sqlite import SqliteStore
from dcode.cli.sessions import show_session
from tests.support.model_server import reply

FIXTURE = Path(__file__).parent / "fixtures" / "sessions_before_store" / "sessions.db"
SESSION = "0ld5e5510n01"


def _earlier_home(home: Path) -> SqliteStore:
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE, home / "sessions.db")
    return SqliteStore(home / "sessions.db", home)


def test_an_earlier_database_lists_shows_and_offers_its_turns(make_settings) -> None:
    settings = make_settings()
    store = _earlier_home(settings.home)
    [info] = store.list()
    assert (info.id, info.title, info.message_count) == (SESSION, "write the notes", 8)
    assert (info.input_tokens, info.output_tokens, info.subagent_input_tokens) == (580, 58, 90)
    turns = store.turns(SESSION)
    assert [(t.number, t.prompt, t.files_changed) for t in turns] == [
        (1, "write the notes", 1),
        (2, "ask a subagent about them", 0),
    ]
    assert turns[0].checkpoint_id is None and turns[1].checkpoint_id is not None
    saved = store.read_thread(SESSION, strict=True)
    assert saved is not None and len(saved.messages) == 8
    assert store.task_threads(SESSION) == [f"{SESSION}/task/1"]
    shown = show_session(settings, SESSION)
    assert "[you] ask a subagent about them" in shown
    assert "[task:1] It holds: first notes." in shown
    assert shown.rstrip().endswith("[dcode] The subagent says it holds first notes.")


async def test_an_earlier_session_resumes_rewinds_and_is_deleted(server, make_settings) -> None:
    settings = make_settings()
    store = _earlier_home(settings.home)
    server.script(reply("Still here.", usage=(200, 20)))
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=SESSION)
        events = [event async for event in runner.run_turn("are you there?")]
        finished = events[-1]
        assert isinstance(finished, TurnFinished) and finished.result == "Still here."
        assert ("user", "ask a subagent about them") in server.transcript(0)
        info = store.get(SESSION)
        assert info is not None and (info.message_count, info.input_tokens) == (10, 780)
        second = (await runner.turns())[1]
        outcome = await runner.rewind(second, code=False)
        assert outcome.messages_left == 4  # the first prompt, its call, its result, the answer
    assert store.task_threads(SESSION) == []  # the rewound task call's thread went with it
    assert [t.prompt for t in store.turns(SESSION)] == ["write the notes"]
    assert store.delete(SESSION) and store.list() == [] and store.read_thread(SESSION) is None
