"""The real binary in a real terminal (tmux), for what only a terminal shows: keys written in one
go, and what is printed on the normal screen once the full-screen app has gone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dcode.agent.store.sqlite import SqliteStore
from tests.support.model_server import ScriptedModelServer, reply

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

DCODE = Path(sys.executable).with_name("dcode")


@dataclass
class Terminal:
    socket: str

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-t", "t", "-p")

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"waiting for {text!r}; the screen:\n{self.screen()}")


@pytest.fixture
def terminal(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> Iterator[Terminal]:
    term = Terminal(f"dcode-test-{os.getpid()}-{time.monotonic_ns()}")
    command = (
        f"cd '{workspace}' && DCODE_HOME='{dcode_home}' OPENAI_API_KEY=test TERM=xterm-256color "
        f"'{DCODE}' -m openai:test-model --base-url '{server.base_url}'; echo DCODE-EXITED $?; sleep 30"
    )
    term.tmux("new-session", "-d", "-s", "t", "-x", "110", "-y", "30", command)
    try:
        yield term
    finally:
        term.tmux("kill-server")


def test_text_and_enter_in_one_write_send_and_quitting_says_how_to_resume(
    terminal: Terminal, server: ScriptedModelServer, dcode_home: Path
) -> None:
    server.script(reply("Hello from the model."))
    terminal.wait_for("Ask dcode")
    terminal.tmux("send-keys", "-t", "t", "hi there", "Enter")  # one write: text and Enter
    terminal.wait_for("Hello from the model.")
    [session] = SqliteStore(dcode_home / "sessions.db", dcode_home).list()
    terminal.tmux("send-keys", "-t", "t", "C-d")
    screen = terminal.wait_for("DCODE-EXITED 0", 15)
    assert f"Session {session.id} saved. Resume with: dcode -r {session.id}" in screen
    assert screen.count("Resume with") == 1


def test_quitting_before_any_session_prints_nothing(terminal: Terminal, dcode_home: Path) -> None:
    terminal.wait_for("Ask dcode")
    terminal.tmux("send-keys", "-t", "t", "C-d")
    screen = terminal.wait_for("DCODE-EXITED 0", 15)
    assert "Resume with" not in screen and "Session" not in screen
    assert not SqliteStore(dcode_home / "sessions.db", dcode_home).list()


def test_the_header_and_a_command_s_lines_while_it_runs(
    terminal: Terminal, server: ScriptedModelServer
) -> None:
    from dcode import __version__
    from tests.support.model_server import tool_call

    ticking = "for i in $(seq 1 10); do echo line $i; sleep 0.3; done"
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": ticking})]), reply("Counted to ten.")
    )
    screen = terminal.wait_for("Ask dcode")
    assert (
        f"dcode {__version__}" in screen
        and "model      openai:test-model" in screen
        and "/help" in screen
    )
    terminal.tmux("send-keys", "-t", "t", "/approve all", "Enter")
    terminal.wait_for("approval mode set to all")
    terminal.tmux("send-keys", "-t", "t", "count to ten", "Enter")
    screen = terminal.wait_for("│ line 2")
    assert "line 10" not in screen  # drawn while the command still runs
    screen = terminal.wait_for("Counted to ten.")
    assert "│ line" not in screen
