"""``dcode`` (the TUI) without a terminal says how to run headless and exits 2, at once and
before anything heavy is imported, instead of hanging on a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.support.model_server import ScriptedModelServer, reply

DCODE = Path(sys.executable).with_name("dcode")
HEAVY = ("textual", "langchain", "langchain_core", "langgraph", "openai", "pydantic")

PROBE = """
import sys
from dcode.cli.app import main
try:
    main({argv!r})
except SystemExit as exc:
    print("EXIT:" + str(exc.code))
print("MODULES:" + ",".join(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))
"""


def environment(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "k",
    }


def test_no_terminal_at_all_says_how_to_run_headless(tmp_path: Path) -> None:
    with open(os.devnull) as nothing:
        done = subprocess.run(
            [DCODE, "fix the bug"],
            stdin=nothing,
            capture_output=True,
            text=True,
            env=environment(tmp_path),
            cwd=tmp_path,
            timeout=30,
        )
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(
        "dcode: error: the TUI needs a terminal, and stdin and stdout are not one."
    )
    assert 'dcode -p "PROMPT"' in line and "stream-json" in line


def test_output_to_a_pipe_is_named(tmp_path: Path) -> None:
    primary, secondary = pty.openpty()
    try:
        done = subprocess.run(
            [DCODE],
            stdin=secondary,
            capture_output=True,
            text=True,
            env=environment(tmp_path),
            cwd=tmp_path,
            timeout=30,
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert done.returncode == 2
    assert "the TUI needs a terminal, and stdout is not one" in done.stderr


def test_the_refusal_comes_before_the_heavy_imports(tmp_path: Path) -> None:
    code = PROBE.format(argv=["-m", "openai:test-model"], heavy=HEAVY)
    with open(os.devnull) as nothing:
        done = subprocess.run(
            [sys.executable, "-c", code],
            stdin=nothing,
            capture_output=True,
            text=True,
            env=environment(tmp_path),
            cwd=tmp_path,
            timeout=60,
        )
    assert "EXIT:2\n" in done.stdout, done.stderr
    assert done.stdout.rstrip().endswith("MODULES:"), done.stdout
    assert not (tmp_path / "home").exists()  # nothing was started, not even the home folder


def test_headless_still_runs_from_a_pipe(server: ScriptedModelServer, tmp_path: Path) -> None:
    """``-p`` is the way without a terminal: it is not refused."""
    server.script(reply("Hello from the pipe."))
    argv = [
        DCODE,
        "-p",
        "hi",
        "-m",
        "openai:test-model",
        "--base-url",
        server.base_url,
        "--api",
        "chat",
    ]
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=environment(tmp_path),
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the pipe.\n"
