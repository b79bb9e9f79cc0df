"""Another process holding a session, as a second dcode would (its pid is what dcode reports).

The holder takes the session through the store's own hold (``SessionStore.hold``) and keeps it until the context ends (or the
test kills it), so tests see a real cross-process hold, not one faked in the test's process. It
opens the store the test's does: Postgres when ``DCODE_DATABASE_URL`` names one (the
``store_kind`` fixture sets it), else the home's SQLite file.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLD = (
    "import os, sys\n"
    "from pathlib import Path\n"
    "from dcode.agent.store import open_store\n"
    "from dcode.settings.config import Settings\n"
    "home = Path(sys.argv[1])\n"
    "url = os.environ.get('DCODE_DATABASE_URL') or None\n"
    "lock = open_store(Settings(home=home, workspace=home, database_url=url)).hold(sys.argv[2])\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
    "lock.release()\n"
)


@contextmanager
def held_elsewhere(home: Path, session_id: str) -> Iterator[subprocess.Popen[str]]:
    """A process holding ``session_id`` under ``home`` until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(home), session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held", (
            "the holder did not start"
        )
        yield proc
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=10)
