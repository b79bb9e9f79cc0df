"""Private files are private: ``$DCODE_HOME`` is 0700 and every file in it 0600 (or 0400).

The whole-home test runs every writer for real under a permissive umask: headless turns with an
image (attachments, request variants), a compaction (the archive), an overflow (large tool
results), the trust record, the TUI's prompt history, preferences and native-stderr log.
"""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dcode.settings.private_files import (
    ensure_private_dir,
    ensure_private_file,
    open_private,
    secure_home,
    write_private,
)
from tests.support.model_server import ScriptedModelServer, fault, reply, tool_call
from tests.test_media_fixtures import encode, noise

DCODE = str(Path(sys.executable).with_name("dcode"))
ROOT = Path(__file__).resolve().parents[1]
BIG = "".join(f"line {n}: {'y' * 90}\n" for n in range(1, 1_001))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def loose_entries(home: Path) -> list[str]:
    """Everything under ``home`` (itself included) that is not 0700 / 0600 / 0400."""
    found = [] if mode(home) == 0o700 else [f"{home} {oct(mode(home))}"]
    for root, dirs, files in os.walk(home):
        for name in dirs:
            path = Path(root) / name
            if mode(path) != 0o700:
                found.append(f"{path} {oct(mode(path))}")
        for name in files:
            path = Path(root) / name
            if mode(path) not in (0o600, 0o400):
                found.append(f"{path} {oct(mode(path))}")
    return found


@contextmanager
def umask(value: int) -> Iterator[None]:
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.parametrize("mask", [0o022, 0o000, 0o277])
def test_helpers_set_exact_modes_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    home = tmp_path / "a" / "home"
    with umask(mask):
        ensure_private_dir(home / "x" / "y")
        write_private(home / "x" / "y" / "f.json", "{}")
        write_private(home / "obj", b"bytes", mode=0o400)
        with open_private(home / "logs" / "log.txt") as handle:
            handle.write("line\n")
        ensure_private_file(home / "sessions.db")
        assert os.umask(mask) == mask  # the process umask was never changed
    assert mode(tmp_path / "a") == 0o700  # a parent dcode had to make
    assert loose_entries(home) == []
    assert mode(home / "obj") == 0o400 and (home / "logs" / "log.txt").read_text() == "line\n"


def test_an_old_loose_home_is_tightened_once_and_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's")
    outside.chmod(0o644)
    home = tmp_path / "home"
    (home / "attachments" / "objects" / "ab").mkdir(parents=True)
    for directory in (
        home,
        home / "attachments",
        home / "attachments" / "objects",
        home / "attachments" / "objects" / "ab",
    ):
        directory.chmod(0o755)
    (home / "sessions.db").write_text("")
    (home / "sessions.db").chmod(0o644)
    (home / "attachments" / "objects" / "ab" / "ab12.png").write_bytes(b"png")
    (home / "attachments" / "objects" / "ab" / "ab12.png").chmod(0o444)
    (home / "link").symlink_to(outside)
    secure_home(home)
    assert mode(outside) == 0o644  # not dcode's file
    (home / "link").unlink()
    assert loose_entries(home) == []
    assert mode(home / "attachments" / "objects" / "ab" / "ab12.png") == 0o400
    (home / "config.toml").write_text("")
    (home / "config.toml").chmod(
        0o644
    )  # written later by hand: the top level is checked each start
    secure_home(home)
    assert mode(home / "config.toml") == 0o600


def test_sqlite_side_files_take_the_private_mode(
    make_settings, server: ScriptedModelServer, dcode_home: Path
) -> None:
    """The -wal and -shm files exist only while a connection is open: one is held open (as a
    second dcode would) while a real headless turn writes its checkpoints."""
    import asyncio
    import io
    import sqlite3

    from dcode.agent.store.sqlite import SqliteStore
    from dcode.cli.headless import HeadlessRequest, run_headless

    settings = make_settings()
    server.script(reply("hello"))
    with umask(0o000):
        SqliteStore(settings.sessions_db, settings.home).create(
            "feedc0de1234", settings.workspace, settings.model
        )
        held = sqlite3.connect(settings.sessions_db)
        try:
            held.execute("SELECT count(*) FROM dcode_sessions").fetchall()
            code = asyncio.run(
                run_headless(
                    settings, HeadlessRequest(prompt="hi"), out=io.StringIO(), err=io.StringIO()
                )
            )
            assert code == 0
            modes = {
                suffix: mode(dcode_home / f"sessions.db{suffix}") for suffix in ("", "-wal", "-shm")
            }
        finally:
            held.close()
    assert modes == {"": 0o600, "-wal": 0o600, "-shm": 0o600}
    assert mode(dcode_home) == 0o700


def dcode(
    args: list[str], workspace: Path, home: Path, mask: int
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
    }
    return subprocess.run(
        [DCODE, *args],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        preexec_fn=lambda: os.umask(mask),
    )


TUI_WRITERS = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from dcode.settings.config import load_settings, save_preference
    from dcode.tui.history import PromptHistory
    from dcode.tui.native_stderr import native_stderr_to

    settings = load_settings()
    history = PromptHistory(settings.history_file, limit=1)
    for text in ("one", "two", "three", "four"):
        history.append(text)
    history.load()  # more lines than three times the limit: rewritten
    save_preference(settings, "theme", "nord")
    with native_stderr_to(settings.home / "logs" / "stderr.log"):
        os.write(2, b"a native library's warning")
    """
)


@pytest.mark.parametrize("mask", [0o022, 0o000])
def test_every_writer_leaves_the_home_private(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path, mask: int
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    (home / "config.toml").write_text(
        f'model = "openai:test-model"\nbase_url = "{server.base_url}"\napi = "chat"\n'
        '[models."openai:test-model"]\nmax_input_tokens = 2000\nimage_inputs = true\nimage_max_pixels = 40000\n'
        '[models."openai:big-model"]\nmax_input_tokens = 128000\n'
    )
    (home / "config.toml").chmod(0o644)
    (workspace / "shot.png").write_bytes(encode(noise((600, 400)), "PNG"))
    (workspace / "big.log").write_text(BIG)
    (workspace / ".dcode").mkdir()
    (workspace / ".dcode" / "config.toml").write_text('base_url = "http://127.0.0.1:9/v1"\n')

    server.script(reply("The answer, at length. " * 400))
    first = dcode(
        ["-p", "describe this image", "-i", "shot.png", "--output-format", "json"],
        workspace,
        home,
        mask,
    )
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session_id"]
    server.script(reply("SUMMARY: an image and a long text."), reply("short"))
    second = dcode(["-p", "now something short", "-r", session], workspace, home, mask)
    assert second.returncode == 0, second.stderr
    server.script(
        reply(
            tool_calls=[
                tool_call("read_file", {"file_path": "big.log"}),
                tool_call("grep", {"pattern": "line", "path": "big.log"}),
            ]
        ),
        fault.context_length_exceeded(),
        reply("clipped"),
    )
    third = dcode(["-p", "what is in big.log?", "-m", "openai:big-model"], workspace, home, mask)
    assert third.returncode == 0, third.stderr
    assert dcode(["trust"], workspace, home, mask).returncode == 0

    primary, secondary = pty.openpty()
    try:
        env = {**os.environ, "DCODE_HOME": str(home), "PYTHONPATH": str(ROOT)}
        tui = subprocess.run(
            [sys.executable, "-c", TUI_WRITERS],
            cwd=workspace,
            env=env,
            stderr=secondary,
            timeout=60,
            preexec_fn=lambda: os.umask(mask),
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert tui.returncode == 0

    written = {path.relative_to(home).parts[0] for path in home.rglob("*") if path.is_file()}
    assert {
        "sessions.db", "attachments", "conversation_history", "large_tool_results", "trusted_projects.json",
        "history.jsonl", "preferences.json", "logs", "config.toml",
    } <= written  # fmt: skip
    assert list((home / "attachments").glob("variants/*/*.json")), "no request variant was cached"
    assert (home / "logs" / "stderr.log").read_text() == "a native library's warning"
    assert loose_entries(home) == []
