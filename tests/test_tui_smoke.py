"""The tmux smoke test of the real binary, run from the suite when tmux is present."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "smoke_tui.sh"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_smoke_tui_in_tmux() -> None:
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=180
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "smoke_tui: ok" in result.stdout


SIGNALS_SCRIPT = SCRIPT.with_name("smoke_tui_signals.sh")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("mode", ["TERM", "HUP", "close", "quit"])
def test_signal_ends_the_shell_command_and_restores_the_terminal(mode: str) -> None:
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(SIGNALS_SCRIPT), mode], capture_output=True, text=True, env=env, timeout=180
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"smoke_tui_signals: ok ({mode})" in result.stdout
