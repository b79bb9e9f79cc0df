"""A damaged sessions.db is one line naming it and saying how to move it aside, exit 2, at
every entry point; the file itself is left exactly as it was."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from dcode.agent.tools.spec import EXECUTE
from dcode.tui.screens.resume import ResumeScreen
from dcode.tui.transcript.entries import NoticeEntry
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_cli_headless import DCODE, model_args, run
from tests.test_tui_app_support import running_app

ANY_ID = "abcdef123456"


@pytest.fixture(params=["garbage", "truncated", "zeroed inside", "zeroed page of a larger file"])
def damaged(
    request: pytest.FixtureRequest, server: ScriptedModelServer, workspace: Path, home: Path
) -> tuple[Path, str]:
    """sessions.db overwritten with bytes that are no database, a real one cut in half, a real
    one with 8 KiB zeroed at 4 KiB (it still opens: the damage is inside), or one grown to many
    sessions with a page in its middle zeroed; and a session id to ask for."""
    db = home / "sessions.db"
    if request.param == "garbage":
        home.mkdir(parents=True)
        db.write_bytes(os.urandom(64) + b"not a database " * 500)
        return db, ANY_ID
    server.script(reply("a real session"))
    made = run(["-p", "hello", *model_args(server), "--output-format", "json"], workspace, home)
    assert made.returncode == 0, made.stderr
    assert not Path(f"{db}-wal").exists()  # all of it is in the main file
    session_id = json.loads(made.stdout)["session_id"]
    match request.param:
        case "truncated":
            data = db.read_bytes()
            db.write_bytes(data[: len(data) // 2])
        case "zeroed inside":
            zero(db, 4096, 8192)
        case "zeroed page of a larger file":
            page_size, pages = grow(db, session_id, copies=150)
            zero(db, (pages // 2) * page_size, page_size)
    assert quick_check(db) != ["ok"]  # the damage is real, and SQLite can tell
    return db, session_id


def zero(db: Path, offset: int, length: int) -> None:
    with db.open("r+b") as handle:
        handle.seek(offset)
        handle.write(bytes(length))


def grow(db: Path, session_id: str, *, copies: int) -> tuple[int, int]:
    """More sessions in the file: ``copies`` of the real one's record and checkpoints under
    new ids, all in the main file afterwards; returns the page size and the number of pages."""
    with closing(sqlite3.connect(db)) as conn:
        for table, key in (
            ("dcode_sessions", "id"),
            ("checkpoints", "thread_id"),
            ("writes", "thread_id"),
        ):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            chosen = ", ".join("?" if name == key else name for name in columns)
            for n in range(copies):
                conn.execute(
                    f"INSERT INTO {table} SELECT {chosen} FROM {table} WHERE {key} = ?",
                    (f"{n:04d}{session_id[4:]}", session_id),
                )
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return conn.execute("PRAGMA page_size").fetchone()[0], conn.execute(
            "PRAGMA page_count"
        ).fetchone()[0]


def quick_check(db: Path) -> list[str]:
    try:
        with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
            return [row[0] for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]


def run_on_terminal(
    args: list[str], workspace: Path, home: Path
) -> subprocess.CompletedProcess[str]:
    """The TUI as a user starts it: stdin and stdout a terminal (a pseudo-terminal here),
    stderr kept apart to read its one line; ``stdout`` is what reached the terminal."""
    primary, secondary = pty.openpty()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
        "TERM": "xterm-256color",
    }
    try:
        done = subprocess.run(
            [DCODE, *args],
            cwd=workspace,
            env=env,
            stdin=secondary,
            stdout=secondary,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
        os.set_blocking(primary, False)
        try:
            shown = os.read(primary, 65536).decode(errors="replace")
        except (BlockingIOError, OSError):
            shown = ""
    finally:
        os.close(primary)
        os.close(secondary)
    return subprocess.CompletedProcess(done.args, done.returncode, shown, done.stderr)


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
    command: list[str],
    damaged: tuple[Path, str],
    server: ScriptedModelServer,
    workspace: Path,
    home: Path,
) -> None:
    db, session_id = damaged
    before, mtime, requests = db.read_bytes(), db.stat().st_mtime_ns, len(server.requests)
    args = [session_id if word == "SID" else word for word in command]
    if command[0] != "sessions":
        args += model_args(server)
    result = (
        run_on_terminal(args, workspace, home)
        if command[0] == "-r"
        else run(args, workspace, home, stdin="")
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(expected_line(db)), line
    assert line.endswith(f"move it aside with `mv {db} {db}.bad` and dcode starts a new one")
    assert result.stdout == ""
    assert db.read_bytes() == before and db.stat().st_mtime_ns == mtime
    assert len(server.requests) == requests  # nothing was sent for it


# Run by the turn's own shell command: empty the write-ahead log into the file (so the damage
# below is what dcode reads next), zero 8 KiB at 4 KiB, and note the file as the damage left it.
_DAMAGE_DURING_THE_TURN = """
import hashlib, json, sqlite3, sys
from pathlib import Path
db, note = Path(sys.argv[1]), Path(sys.argv[2])
conn = sqlite3.connect(db)
busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
conn.close()
if busy:
    sys.exit("the log could not be emptied")
with db.open("r+b") as handle:
    handle.seek(4096)
    handle.write(bytes(8192))
note.write_text(json.dumps({"sha": hashlib.sha256(db.read_bytes()).hexdigest(), "mtime": db.stat().st_mtime_ns}))
"""


def test_damage_found_during_a_turn_ends_it_and_nothing_more_is_written(
    server: ScriptedModelServer, workspace: Path, home: Path, tmp_path: Path
) -> None:
    """The file is damaged while a turn runs, between two of its checkpoints: the next write
    fails, the check says why, and the file stays as the damage left it (no checkpoint, no
    session record, no write-ahead log copied in when dcode closes it)."""
    db, script, note = home / "sessions.db", tmp_path / "damage.py", tmp_path / "damaged.json"
    script.write_text(_DAMAGE_DURING_THE_TURN)
    command = f"{sys.executable} {script} {db} {note}"
    server.script(
        reply(tool_calls=[tool_call(EXECUTE.name, {"command": command})]), reply("never asked for")
    )
    result = run(["-p", "go", *model_args(server), "--approve", "all"], workspace, home)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(expected_line(db)), line
    assert result.stdout == ""
    left = json.loads(note.read_text())
    assert (
        hashlib.sha256(db.read_bytes()).hexdigest() == left["sha"]
        and db.stat().st_mtime_ns == left["mtime"]
    )
    assert len(server.requests) == 1  # the turn ended at the failed write
    listed = run(["sessions", "list"], workspace, home)
    assert listed.returncode == 2 and listed.stderr.startswith(expected_line(db)), listed.stderr


@pytest.mark.parametrize("damage", ["overwritten", "dropped"])
def test_show_says_so_when_only_the_checkpoints_are_damaged(
    damage: str, server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    """The session's own record reads fine, its saved messages do not: that is damage to say,
    not an empty session to print. A page overwritten is found by the check at open, before
    the record is read; a table gone is found when the messages are read."""
    server.script(reply("a real session"))
    made = run(["-p", "hello", *model_args(server), "--output-format", "json"], workspace, home)
    assert made.returncode == 0, made.stderr
    session_id = json.loads(made.stdout)["session_id"]
    db = home / "sessions.db"
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        [root] = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'checkpoints'"
        ).fetchone()
        if damage == "dropped":
            conn.execute("DROP TABLE checkpoints")
    if damage == "overwritten":
        with db.open("r+b") as handle:
            handle.seek((root - 1) * page_size)
            handle.write(b"\xde\xad" * (page_size // 2))
    listed = run(["sessions", "list"], workspace, home)
    assert listed.returncode == (2 if damage == "overwritten" else 0), listed.stderr
    result = run(["sessions", "show", session_id], workspace, home)
    assert result.returncode == 2, result.stdout
    [line] = result.stderr.splitlines()
    assert line.startswith(expected_line(db)), line
    assert result.stdout == ""


def test_doctor_names_the_damaged_database(
    damaged: tuple[Path, str], workspace: Path, home: Path
) -> None:
    db, _ = damaged
    result = run(["doctor", "-m", "openai:gpt-5.1"], workspace, home)
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if line.startswith("sessions")]
    assert line.startswith(f"sessions     ERROR the session database {db} is damaged (")
    assert f"mv {db} {db}.bad" in line and "Traceback" not in result.stderr


def test_doctor_counts_the_sessions_of_a_sound_database(
    server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
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
        # The entries, not the screen: where the screen wraps the line depends on the path.
        await h.until(
            lambda: any("is damaged" in e.text for e in h.entries(NoticeEntry)),
            30,
            "the damaged-database line",
        )
        [line] = [entry.text for entry in h.entries(NoticeEntry) if "is damaged" in entry.text]
        assert line.startswith(f"the session database {db} is damaged (")
        assert line.endswith(f"move it aside with `mv {db} {db}.bad` and dcode starts a new one")
        assert h.app.is_running and not h.app.ready
        assert h.app.status.activity == "Not started"
        await h.send("/resume")  # the picker reads the same file: the same line, no crash
        await h.until(
            lambda: (
                [e.text for e in h.entries(NoticeEntry) if "is damaged" in e.text] == [line, line]
            ),
            10,
            "the line again",
        )
        assert not isinstance(h.app.screen, ResumeScreen) and h.app.is_running
    assert db.read_bytes() == before
