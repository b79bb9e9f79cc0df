"""sessions.db open in several processes at once: what dcode does with the file in one process
must not drop the locks SQLite holds there, or another process takes the database for unused."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from dcode.agent.store.sqlite import SqliteStore
from dcode.settings.private_files import ensure_private_file

_OTHER_PROCESS = (
    "import sqlite3, sys\n"
    "conn = sqlite3.connect(sys.argv[1])\n"
    "conn.execute('SELECT count(*) FROM dcode_sessions').fetchone()\n"
    "conn.close()\n"
)


def test_the_store_keeps_this_process_sqlite_locks(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    store = SqliteStore(db, tmp_path)
    store.create("abc123", tmp_path, "openai:x")
    # Open for the whole run, as the engine's checkpointer connection is.
    held = sqlite3.connect(db)
    try:
        held.execute("PRAGMA journal_mode=WAL")
        held.execute(
            "INSERT INTO dcode_sessions (id, cwd, model, created, updated) VALUES ('def456', '/', 'm', 0, 0)"
        )
        held.commit()
        assert store.get("abc123") is not None  # what a turn's bookkeeping does meanwhile
        ensure_private_file(db)  # and what the engine does when it opens
        subprocess.run([sys.executable, "-c", _OTHER_PROCESS, str(db)], check=True, timeout=30)
        # The other process saw this one's connection: it neither checkpointed nor removed the WAL.
        assert Path(f"{db}-wal").exists()
        held.execute(
            "INSERT INTO dcode_sessions (id, cwd, model, created, updated) VALUES ('ghi789', '/', 'm', 0, 0)"
        )
        held.commit()
    finally:
        held.close()
    assert {info.id for info in store.list()} == {"abc123", "def456", "ghi789"}
