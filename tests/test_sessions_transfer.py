"""``dcode sessions export|import``: a session made by the real loop (tool calls, a subagent, file
edits) moved to another store gives the same transcript, ``/rewind`` choices and token figures,
and a bad file is one line, with nothing imported."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import CompactionFinished
from dcode.agent.saved_thread import replay, thread_reader
from dcode.agent.store import open_store
from dcode.agent.store.base import SessionStore
from dcode.agent.tools.spec import WRITE_FILE
from dcode.cli.app import sub
from dcode.cli.rewind import rewind
from dcode.cli.sessions import export_sessions, import_sessions, show_session
from dcode.settings.config import ApprovalMode, Settings
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.support.stores import configured
from tests.test_saved_thread_tasks import settled, task_call
from tests.test_tui_app_support import make_settings

ROUTES = [("sqlite", "sqlite"), ("sqlite", "postgres", "sqlite"), ("postgres", "sqlite")]
"""The stores a session is moved through, one export and import a hop (the last: a session
made, compacted and given a subagent on the server)."""
DATABASE_URL = "DCODE_DATABASE_URL"

PLAN = "make a plan"
CHANGE = "change the plan"
JOB = "Read a.txt and report its first word."
FIRST_PLAN = "step one\n" + "".join(f"- detail {n} of the first plan\n" for n in range(200))
"""Long enough that a summary of the first prompt's messages is smaller than they are, whether
tokens are counted with the encoding or bounded from lengths (which this process may use)."""


def imported(session_id: str) -> str:
    """The import's line for the session ``make_session`` makes, on a machine without its
    compaction archive (a file beside the store, which stays where it is)."""
    return (
        f"imported session {session_id} ({PLAN}); 1 file(s) beside the store are not here: "
        f"conversation_history/{session_id}.md"
    )


@dataclass
class Side:
    settings: Settings
    opened: list[SessionStore]

    def store(self) -> SessionStore:
        """The side's store, opened once (``route`` closes it)."""
        if not self.opened:
            self.opened.append(open_store(self.settings))
        return self.opened[0]


def side(home: Path, workspace: Path, server: ScriptedModelServer, kind: str) -> Side:
    base = make_settings(home, workspace, server, approve=ApprovalMode.EDITS)
    return Side(configured(base, kind), [])


@pytest.fixture(params=ROUTES, ids=["-to-".join(route) for route in ROUTES])
def route(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    workspace: Path,
    server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[list[Side]]:
    """A side (a ``$DCODE_HOME`` of its own, and its store) for each store of the route."""
    if "postgres" in request.param:
        monkeypatch.setenv(DATABASE_URL, request.getfixturevalue("postgres_url"))
    sides = [
        side(tmp_path / f"leg{number}", workspace, server, kind)
        for number, kind in enumerate(request.param)
    ]
    yield sides
    for leg in sides:
        for store in leg.opened:
            store.close()


def write(path: str, content: str):
    return tool_call(WRITE_FILE.name, {"file_path": path, "content": content})


async def make_session(server: ScriptedModelServer, settings: Settings) -> str:
    """Two prompts: a file written and a subagent's read, then the file written again; then
    the conversation compacted."""
    (Path(settings.workspace) / "a.txt").write_text("alpha beta\n")
    server.script(
        reply(tool_calls=[write("plan.md", FIRST_PLAN)], usage=(20, 2)).answering(PLAN),
        reply(tool_calls=[task_call(JOB)], usage=(25, 3)).answering(PLAN),
        reply(tool_calls=[tool_call("read_file", {"file_path": "a.txt"})], usage=(30, 3)).answering(
            JOB
        ),
        reply("The first word is alpha.", usage=(35, 5)).answering(JOB),
        reply("Planned: alpha.", usage=(40, 4)).answering(PLAN),
        reply(tool_calls=[write("plan.md", "step two\n")], usage=(50, 5)).answering(PLAN),
        reply("Replanned.", usage=(60, 6)).answering(PLAN),
        reply("SUMMARY: a plan was made, with alpha."),
    )
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        _ = [event async for event in runner.run_turn(PLAN)]
        _ = [event async for event in runner.run_turn(CHANGE)]
        compacted = await runner.compact()
    # every step answered, the summary last: a failure says what the engine saw
    assert any(isinstance(event, CompactionFinished) for event in compacted), (
        compacted,
        [(request.step, request.refused) for request in server.requests],
    )
    assert server.remaining == []
    return runner.session_id


def transcript(store: SessionStore, session_id: str) -> list[tuple]:
    saved = store.read_thread(session_id)
    assert saved is not None
    events = replay(saved.messages, thread_id=session_id, read_thread=thread_reader(store))
    return settled(list(events))


def rewind_choices(store: SessionStore, session_id: str) -> list[tuple]:
    return [
        (turn.number, turn.prompt, turn.started, turn.checkpoint_id, turn.files_changed)
        for turn in store.turns(session_id)
    ]


def shown(settings: Settings, session_id: str) -> list[str]:
    return [
        line
        for line in show_session(settings, session_id).splitlines()
        if not line.startswith("updated")
    ]


def export_to(settings: Settings, path: Path, ids: list[str] | None = None) -> list[str]:
    with path.open("w", encoding="utf-8") as out:
        return export_sessions(settings, ids or [], out)


def import_from(settings: Settings, path: Path, *, replace: bool = False) -> list[str]:
    with path.open("rb") as source:
        return import_sessions(settings, source, replace=replace)


def test_a_round_trip_keeps_transcript_rewind_choices_and_tokens(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path, route: list[Side]
) -> None:
    first, last = route[0], route[-1]
    session_id = asyncio.run(make_session(server, first.settings))
    for number, (source, target) in enumerate(itertools.pairwise(route)):
        exported = tmp_path / f"hop{number}.jsonl"
        export_to(source.settings, exported, [session_id[:6]])
        [line] = import_from(target.settings, exported)
        assert line.startswith(f"imported session {session_id} ({PLAN})")

    before, after = first.store(), last.store()
    assert after.get(session_id) == before.get(session_id)  # every token figure, the title
    assert after.usage(session_id) == before.usage(session_id) != []  # by model and agent
    assert transcript(after, session_id) == transcript(before, session_id)
    assert any(agent for agent, *_ in transcript(after, session_id))  # the subagent's lines
    assert after.task_threads(session_id) == before.task_threads(session_id)
    assert after.compaction_log(session_id) == before.compaction_log(session_id) != []
    for thread in [session_id, *before.task_threads(session_id)]:
        assert after.read_thread(thread) == before.read_thread(thread)
    assert rewind_choices(after, session_id) == rewind_choices(before, session_id)
    assert [turn.files_changed for turn in after.turns(session_id)] == [1, 1]
    assert shown(last.settings, session_id) == shown(first.settings, session_id)

    # The kept contents travelled: the last store's rewind puts the first plan back.
    info = after.get(session_id)
    assert info is not None
    rewind(last.settings, info, 2, conversation=True, code=True)
    assert (workspace / "plan.md").read_text() == FIRST_PLAN
    assert [turn.prompt for turn in after.turns(session_id)] == [PLAN]


def test_a_second_import_skips_the_session_and_replace_replaces_it(
    server: ScriptedModelServer, tmp_path: Path, route: list[Side]
) -> None:
    source, target = route[0], route[1]
    session_id = asyncio.run(make_session(server, source.settings))
    exported = tmp_path / "sessions.jsonl"
    export_to(source.settings, exported)
    assert import_from(target.settings, exported) == [imported(session_id)]
    assert import_from(target.settings, exported) == [
        f"skipped session {session_id}: it is already in {target.store().name} (--replace replaces it)"
    ]
    assert import_from(target.settings, exported, replace=True) == [imported(session_id)]
    assert rewind_choices(target.store(), session_id) == rewind_choices(source.store(), session_id)


# -- the command line, and bad files --------------------------------------------------------


def cli(home: Path, *args: str, input: bytes | None = None) -> tuple[int, str, str]:
    env = {"DCODE_HOME": str(home), "OPENAI_API_KEY": "k", "DCODE_BASE_URL": None}
    result = CliRunner().invoke(sub, list(args), env=env, input=input, prog_name="dcode")
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def exported(server: ScriptedModelServer, workspace: Path, tmp_path: Path) -> tuple[str, Path]:
    """A session made in one home and exported with the command, to ``exported.jsonl``."""
    settings = side(tmp_path / "source", workspace, server, "sqlite").settings
    session_id = asyncio.run(make_session(server, settings))
    path = tmp_path / "exported.jsonl"
    code, out, err = cli(settings.home, "sessions", "export", "-o", str(path))
    assert (code, out) == (0, "")
    assert err == (
        f"session {session_id}: 1 file(s) beside the store stay in {settings.home} "
        f"(not in the export): conversation_history/{session_id}.md\n"
    )
    return session_id, path


def test_the_commands_move_a_session_through_a_file_and_stdin(
    exported: tuple[str, Path], tmp_path: Path
) -> None:
    session_id, path = exported
    assert path.stat().st_mode & 0o077 == 0  # sessions are private
    code, out, _err = cli(tmp_path / "one", "sessions", "import", str(path))
    assert (code, out) == (0, imported(session_id) + "\n")
    code, out, _err = cli(tmp_path / "two", "sessions", "import", "-", input=path.read_bytes())
    assert (code, out) == (0, imported(session_id) + "\n")
    code, out, _err = cli(tmp_path / "two", "sessions", "export", session_id)
    assert code == 0
    # The same, but the header's time and the files beside the store (not on this machine).
    assert lines_of(out)[1:] == lines_of(path.read_text())[1:]


def lines_of(export: str) -> list[dict]:
    parsed = [json.loads(line) for line in export.splitlines()]
    for line in parsed:
        line.pop("files", None)
        line.pop("digest", None)
    return parsed


def reseal(lines: list[str]) -> list[str]:
    """Session blocks' end lines made to match their (changed) lines again, as a hostile file's
    author would, so that the checks behind the digest are the ones tested."""
    out, block = [], hashlib.sha256()
    count = 0
    for line in lines:
        value = json.loads(line)
        if value.get("kind") == "session_end":
            value.update(lines=count, digest=block.hexdigest())
            out.append(json.dumps(value))
            block, count = hashlib.sha256(), 0
            continue
        if value.get("kind") != "end" and "format" not in value:
            block.update((line + "\n").encode())
            count += 1
        out.append(line)
    return out


def edited(lines: list[str], kind: str, change: Callable[[dict], None]) -> list[str]:
    """The first line of ``kind`` changed, the blocks resealed."""
    for index, line in enumerate(lines):
        value = json.loads(line)
        if value.get("kind") == kind:
            change(value)
            lines = [*lines[:index], json.dumps(value), *lines[index + 1 :]]
            return reseal(lines)
    raise AssertionError(f"no {kind} line")


def hostile_files(lines: list[str]) -> dict[str, tuple[bytes, str]]:
    """Name: (the file, what its one line must say)."""
    text = "\n".join(lines) + "\n"
    flipped = [line.replace(f'"title":"{PLAN}"', '"title":"owned"') for line in lines]
    assert flipped != lines

    def join(changed: list[str]) -> bytes:
        return ("\n".join(changed) + "\n").encode()

    def other_thread(value: dict) -> None:
        value["thread"] = "someone-else"

    def pickled(value: dict) -> None:
        value["checkpoint"][0] = "pickle"

    def escaping(value: dict) -> None:
        value["id"] = value["info"]["id"] = "../../locks/x"

    def wrong_blob(value: dict) -> None:
        value["data"] = base64.b64encode(b"not what was kept").decode()

    return {
        "not an export": (b"hello\nworld\n", "not a dcode sessions export"),
        "binary": (bytes(range(256)) * 4, "not a dcode sessions export"),
        "empty": (b"", "not a dcode sessions export"),
        "a newer version": (
            text.replace('"version": 1', '"version": 99', 1).encode(),
            "export format version 99",
        ),
        "truncated": (text[: len(text) // 2].encode(), "line"),
        "cut between lines": (join(lines[:-1]), "truncated"),
        "a broken line": (join([*lines[:2], "{not json", *lines[3:]]), "line 3: not a JSON line"),
        "an edited line": (join(flipped), "do not match their digest"),
        "another session's thread": (
            join(edited(lines, "checkpoint", other_thread)),
            "not one of session",
        ),
        "a pickled value": (join(edited(lines, "checkpoint", pickled)), "known type"),
        "an escaping id": (join(edited(lines, "session", escaping)), "not a session id"),
        "a blob not matching its hash": (
            join(edited(lines, "blob", wrong_blob)),
            "does not match its hash",
        ),
        "lines after the end": (join([*lines, lines[1]]), "does not close the file"),
        "a deeply nested line": (join([lines[0], "[" * 200_000]), "line 2: not a JSON line"),
    }


def test_a_bad_file_is_one_line_and_imports_nothing(
    exported: tuple[str, Path], tmp_path: Path
) -> None:
    session_id, path = exported
    lines = path.read_text().splitlines()
    for number, (name, (content, said)) in enumerate(hostile_files(lines).items()):
        home = tmp_path / f"target{number}"
        bad = tmp_path / f"bad{number}.jsonl"
        bad.write_bytes(content)
        code, out, err = cli(home, "sessions", "import", str(bad))
        assert code != 0, name
        assert out == "", name
        assert len(err.strip().splitlines()) == 1 and said in err, (name, err)
        assert "nothing was imported" in err, name
        store = open_store(Settings(home=home, workspace=tmp_path))
        assert store.list() == [], name
        assert store.read_thread(session_id) is None, name


def test_two_sessions_with_the_second_damaged_import_neither(
    exported: tuple[str, Path], tmp_path: Path
) -> None:
    session_id, path = exported
    lines = path.read_text().splitlines()
    block = lines[1:-1]
    second = reseal([line.replace(session_id, "f" * 12) for line in block])
    second[1] = second[1][:-20] + "0" * 20  # a damaged checkpoint line
    content = [lines[0], *block, *second, '{"kind": "end", "sessions": 2}']
    bad = tmp_path / "two.jsonl"
    bad.write_text("\n".join(content) + "\n")
    home = tmp_path / "target"
    code, _out, err = cli(home, "sessions", "import", str(bad))
    assert code != 0 and "nothing was imported" in err
    store = open_store(Settings(home=home, workspace=tmp_path))
    assert store.list() == []
    assert store.read_thread(session_id) is None


def test_an_unknown_id_exports_nothing(exported: tuple[str, Path], tmp_path: Path) -> None:
    code, out, err = cli(tmp_path / "source", "sessions", "export", "nosuchsession")
    assert (code, out) == (1, "")
    assert "no session 'nosuchsession'" in err


def test_attachments_stay_files_and_both_ends_name_them(
    server: ScriptedModelServer,
    make_settings: Callable[..., Settings],
    workspace: Path,
    tmp_path: Path,
) -> None:
    import io

    from dcode.cli.headless import HeadlessRequest, run_headless
    from dcode.cli.headless_media import attach_images
    from tests.test_media_request import VISION, screenshot

    settings = make_settings("chat", model_overrides={"openai:test-model": VISION})
    server.script(reply("I see stripes."))
    request = attach_images(
        settings, HeadlessRequest(prompt="what is in [image 1]?"), [screenshot(workspace / "s.png")]
    )
    assert asyncio.run(run_headless(settings, request, out=io.StringIO(), err=io.StringIO())) == 0
    [image] = list((settings.attachments_dir / "objects").rglob("*.png"))
    name = str(image.relative_to(settings.home))
    exported = tmp_path / "with-image.jsonl"
    notes = export_to(settings, exported)
    assert len(notes) == 1 and name in notes[0] and "not in the export" in notes[0]

    target = Settings(home=tmp_path / "elsewhere", workspace=workspace)
    [line] = import_from(target, exported)
    assert line.endswith(f"1 file(s) beside the store are not here: {name}")
    session = open_store(target).latest()
    assert session is not None
    assert "[you] what is in [image 1]?" in show_session(target, session.id)


def test_a_session_that_fails_while_written_is_taken_out_again(
    exported: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dcode.agent.store.base import SessionDatabaseError
    from dcode.agent.store.sqlite import SqliteStore

    def full(store: SqliteStore, records: object) -> None:
        raise SessionDatabaseError(
            f"{store.name} cannot be written: the disk is full", damaged=False
        )

    session_id, path = exported
    home = tmp_path / "full"
    monkeypatch.setattr(SqliteStore, "import_records", full)  # the last write of a session
    code, out, err = cli(home, "sessions", "import", str(path))
    assert (code, out) == (2, "")
    assert err.strip().endswith("cannot be written: the disk is full")
    store = open_store(Settings(home=home, workspace=tmp_path))
    assert store.list() == []
    for thread in [session_id, f"{session_id}/task/1"]:
        assert store.read_thread(thread) is None  # its checkpoints went again
    monkeypatch.undo()
    code, out, _err = cli(home, "sessions", "import", str(path))
    assert (code, out) == (0, imported(session_id) + "\n")
    assert store.read_thread(f"{session_id}/task/1") is not None


def test_an_imported_value_never_runs_code(exported: tuple[str, Path], tmp_path: Path) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from tests.support.hostile_values import Trap

    _session_id, path = exported
    marker = tmp_path / "ran"
    kind, payload = JsonPlusSerializer().dumps_typed({"source": Trap(str(marker))})
    # The payload is live: the savers' default serializer would call the class it names.
    JsonPlusSerializer().loads_typed((kind, payload))
    assert marker.exists()
    marker.unlink()

    def trapped(value: dict) -> None:
        value["metadata"] = [kind, base64.b64encode(payload).decode()]

    bad = tmp_path / "trapped.jsonl"
    bad.write_text("\n".join(edited(path.read_text().splitlines(), "checkpoint", trapped)) + "\n")
    code, out, err = cli(tmp_path / "target", "sessions", "import", str(bad))
    assert not marker.exists(), (code, out, err)
