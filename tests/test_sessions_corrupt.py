"""A damaged sessions.db is one line naming it and saying how to move it aside, exit 2, at
every entry point; the file itself is left exactly as it was."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from dcode.tui.screens.resume import ResumeScreen
from dcode.tui.transcript.entries import NoticeEntry
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_cli_headless import model_args, run
from tests.test_tui_app_support import running_app

ANY_ID = "abcdef123456"


@pytest.fixture(params=["garbage", "truncated"])
def damaged(request: pytest.FixtureRequest, server: ScriptedModelServer, workspace: Path, home: Path) -> tuple[Path, str]:
    """sessions.db overwritten with bytes that are no database, or a real one cut in half;
    and a session id to ask for."""
    db = home / "sessions.db"
    if request.param == "garbage":
        home.mkdir(parents=True)
        db.write_bytes(os.urandom(64) + b"not a database " * 500)
        return db, ANY_ID
    server.script(reply("a real session"))
    made = run(["-p", "hello", *model_args(server), "--output-format", "json"], workspace, home)
    assert made.returncode == 0, made.stderr
    assert not Path(f"{db}-wal").exists()  # all of it is in the main file
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    return db, json.loads(made.stdout)["session_id"]


def expected_line(db: Path) -> str:
    return f"dcode: error: the session database {db} is damaged ("


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["-p", "hi"], id="headless new"),
        pytest.param(["-p", "hi", "-r", "SID"], id="headless resume"),
        pytest.param(["-p", "hi", "-c"], id="headless continue"),
        pytest.param(["-r", "SID"], id="tui resume"),
        pytest.param(["sessions", "list"], id="sessions list"),
        pytest.param(["sessions", "show", "SID"], id="sessions show"),
        pytest.param(["sessions", "delete", "SID"], id="sessions delete"),
    ],
)
def test_a_damaged_database_is_one_line_and_exit_2(
    command: list[str], damaged: tuple[Path, str], server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    db, session_id = damaged
    before, requests = db.read_bytes(), len(server.requests)
    args = [session_id if word == "SID" else word for word in command]
    if command[0] != "sessions":
        args += model_args(server)
    result = run(args, workspace, home, stdin="")
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(expected_line(db)), line
    assert line.endswith(f"move it aside with `mv {db} {db}.bad` and dcode starts a new one")
    assert result.stdout == ""
    assert db.read_bytes() == before
    assert len(server.requests) == requests  # nothing was sent for it


@pytest.mark.parametrize("damage", ["overwritten", "dropped"])
def test_show_says_so_when_only_the_checkpoints_are_damaged(
    damage: str, server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    """The session's own record reads fine, its saved messages do not: that is damage to say,
    not an empty session to print."""
    server.script(reply("a real session"))
    made = run(["-p", "hello", *model_args(server), "--output-format", "json"], workspace, home)
    assert made.returncode == 0, made.stderr
    session_id = json.loads(made.stdout)["session_id"]
    db = home / "sessions.db"
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        [root] = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'checkpoints'").fetchone()
        if damage == "dropped":
            conn.execute("DROP TABLE checkpoints")
    if damage == "overwritten":
        with db.open("r+b") as handle:
            handle.seek((root - 1) * page_size)
            handle.write(b"\xde\xad" * (page_size // 2))
    assert run(["sessions", "list"], workspace, home).returncode == 0  # the record is sound
    result = run(["sessions", "show", session_id], workspace, home)
    assert result.returncode == 2, result.stdout
    [line] = result.stderr.splitlines()
    assert line.startswith(expected_line(db)), line
    assert result.stdout == ""


def test_doctor_names_the_damaged_database(damaged: tuple[Path, str], workspace: Path, home: Path) -> None:
    db, _ = damaged
    result = run(["doctor", "-m", "openai:gpt-5.1"], workspace, home)
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if line.startswith("sessions")]
    assert line.startswith(f"sessions     ERROR the session database {db} is damaged (")
    assert f"mv {db} {db}.bad" in line and "Traceback" not in result.stderr


def test_doctor_counts_the_sessions_of_a_sound_database(server: ScriptedModelServer, workspace: Path, home: Path) -> None:
    server.script(reply("one"))
    assert run(["-p", "hello", *model_args(server)], workspace, home).returncode == 0
    result = run(["doctor", "-m", "openai:gpt-5.1"], workspace, home)
    assert f"sessions     {home / 'sessions.db'} (1 session)" in result.stdout.splitlines()


async def test_the_tui_shows_the_line_instead_of_crashing(
    damaged: tuple[Path, str], server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    db, _ = damaged
    before = db.read_bytes()
    async with running_app(server, workspace, home, wait_ready=False) as h:
        await h.until(lambda: "is damaged" in h.text(), 30, "the damaged-database line")
        [line] = [entry.text for entry in h.entries(NoticeEntry) if "is damaged" in entry.text]
        assert line.startswith(f"the session database {db} is damaged (")
        assert line.endswith(f"move it aside with `mv {db} {db}.bad` and dcode starts a new one")
        assert h.app.is_running and not h.app.ready
        assert h.app.status.activity == "Not started"
        await h.send("/resume")  # the picker reads the same file: the same line, no crash
        await h.until(lambda: [e.text for e in h.entries(NoticeEntry) if "is damaged" in e.text] == [line, line], 10, "the line again")
        assert not isinstance(h.app.screen, ResumeScreen) and h.app.is_running
    assert db.read_bytes() == before
