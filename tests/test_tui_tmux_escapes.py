"""The real binary in a real terminal (tmux) showing an answer that tries to drive it: the
pane's title, the screen, the terminal's state and its clipboard stay the user's."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.support.hostile_text import HOSTILE
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_tmux import Terminal, terminal  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_an_answer_cannot_retitle_clear_or_write_the_clipboard(
    terminal: Terminal,  # noqa: F811 - the fixture, imported for pytest to find
    server: ScriptedModelServer,
) -> None:
    terminal.tmux(
        "set-option", "-g", "set-clipboard", "on"
    )  # OSC 52 from the pane would fill a buffer
    server.script(
        reply("The first answer stays on screen."),
        reply(f"{HOSTILE}\n\nThe end of the second answer."),
    )
    terminal.wait_for("Ask dcode")
    title = terminal.tmux("display-message", "-p", "-t", "t", "#{pane_title}")
    terminal.tmux("send-keys", "-t", "t", "first", "Enter")
    terminal.wait_for("The first answer stays on screen.")
    terminal.tmux("send-keys", "-t", "t", "second", "Enter")
    terminal.wait_for("The end of the second answer.")
    time.sleep(1.0)  # a few more frames (the spinner, the status bar) on top of it
    screen = terminal.screen()
    assert (
        "The first answer stays on screen." in screen and "Ask dcode" in screen
    )  # nothing cleared
    assert "click here" in screen and "PWNED" not in screen
    assert terminal.tmux("display-message", "-p", "-t", "t", "#{pane_title}") == title
    assert "PWNED" not in title
    assert terminal.tmux("list-buffers") == ""
