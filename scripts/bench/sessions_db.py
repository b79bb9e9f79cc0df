"""Benchmark: the integrity check of sessions.db when a process first opens it.

Every dcode process that uses sessions.db (``dcode -p``, ``sessions list``, the TUI's engine)
runs ``PRAGMA quick_check`` on it once before anything writes to it, so that a damaged file is
refused instead of written into. The check reads every page, so its cost grows with the file.

The benchmark builds a sessions.db of about ``--mb`` MB shaped like a used one: LangGraph's
checkpoint tables with checkpoints of a few hundred bytes to 40 KB (half incompressible), their
pending writes, and dcode's session records. Each figure is ``check_database`` timed in a fresh
process (nothing cached), with the file in the OS page cache, as it is for a file used daily.
Target (2 cores): <= 200 ms at 50 MB. In the TUI the check runs in a thread, never on the UI's.

Run: .venv/bin/python scripts/bench/sessions_db.py [--mb 50] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcode.agent.store.sqlite import SqliteStore  # noqa: E402

TARGET_MS = 200.0
SIZES = (800, 2_000, 6_000, 15_000, 40_000)
TIMED = """
import sys, time
from pathlib import Path
from dcode.agent.store.sqlite_file import check_database
start = time.perf_counter()
check_database(Path(sys.argv[1]))
print((time.perf_counter() - start) * 1000)
"""


def build(db: Path, megabytes: int) -> int:
    """A sessions.db of about ``megabytes``; returns the number of checkpoints in it."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    store = SqliteStore(db, db.parent)
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        SqliteSaver(conn).setup()
        rng, total, count = random.Random(7), 0, 0
        while total < megabytes * 1_000_000:
            size = rng.choice(SIZES)
            blob = rng.randbytes(size // 2) + b"m" * (size // 2)
            thread = f"s{count // 200:05d}"
            conn.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, type, checkpoint, metadata) VALUES (?, '', ?, 'msgpack', ?, ?)",
                (thread, f"{count:012d}", blob, b"{}"),
            )
            conn.execute(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES (?, '', ?, 't', 0, 'messages', 'msgpack', ?)",
                (thread, f"{count:012d}", blob[: size // 4]),
            )
            total, count = total + size + size // 4, count + 1
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for n in range(count // 200 + 1):
        store.create(f"s{n:05d}", ROOT, "openai:bench")
    return count


def timed(db: Path) -> float:
    result = subprocess.run(
        [sys.executable, "-c", TIMED, str(db)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return float(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.db"
        start = time.perf_counter()
        checkpoints = build(db, args.mb)
        print(
            f"sessions.db of {db.stat().st_size / 1e6:.1f} MB ({checkpoints} checkpoints), built in {time.perf_counter() - start:.1f} s"
        )
        timed(db)  # the file into the page cache
        figures = sorted(timed(db) for _ in range(args.runs))
    median = statistics.median(figures)
    load = os.getloadavg()[0]
    print(
        f"quick_check at first open: median {median:.0f} ms, min {figures[0]:.0f}, max {figures[-1]:.0f} "
        f"over {args.runs} processes; {os.cpu_count()} cores, load {load:.1f}"
    )
    print(f"target <= {TARGET_MS:.0f} ms at 50 MB: {'PASS' if median <= TARGET_MS else 'FAIL'}")


if __name__ == "__main__":
    main()
