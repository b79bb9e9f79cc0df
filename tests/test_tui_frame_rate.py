"""dcode raises Textual's frame cap to 120 a second, unless the user chose one."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import os, dcode.tui, textual.constants as c, textual.screen as s;"
    "print(c.MAX_FPS, round(1 / s.UPDATE_PERIOD), os.environ.get('TEXTUAL_FPS'))"
)


def run_probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_cap_is_raised_and_not_passed_on() -> None:
    # The screen's update period follows the cap; commands dcode runs do not inherit it.
    assert run_probe() == "120 120 None"


def test_the_users_own_setting_wins() -> None:
    assert run_probe(TEXTUAL_FPS="30") == "30 30 30"
