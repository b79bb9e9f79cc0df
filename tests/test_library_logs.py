"""A library's log line never reaches the terminal unless ``--debug`` asks for it: headless
prints one line of its own for a failure, and the TUI's screen must not be written over."""

from __future__ import annotations

import subprocess
import sys

LOG_A_WARNING = """
import logging, sys
from dcode.library_logs import route_library_logs
route_library_logs(debug=sys.argv[1] == "debug")
logging.getLogger("some_library.module").warning("a library's own warning")
"""


def test_library_warnings_stay_off_stderr_unless_debugging() -> None:
    quiet = subprocess.run(
        [sys.executable, "-c", LOG_A_WARNING, "quiet"], capture_output=True, text=True, timeout=60
    )
    assert quiet.returncode == 0 and quiet.stderr == ""
    debug = subprocess.run(
        [sys.executable, "-c", LOG_A_WARNING, "debug"], capture_output=True, text=True, timeout=60
    )
    assert debug.stderr == "dcode: some_library.module: a library's own warning\n"
