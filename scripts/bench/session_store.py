"""Benchmark: the session store on PostgreSQL next to SQLite.

Three figures, each printed beside its target:

- per-turn store cost, a 200-turn session: real turns (``Engine`` and ``SessionRunner``, the
  scripted model server on loopback), each the model calling read_file on a 3 KB file, then
  answering. The cost of a turn is the time spent inside the store: its record methods
  (``begin_turn``, ``start_turn``, ``get``, ``record_turn``, ...) and the checkpointer's
  (``aput``, ``aput_writes``, ``aget_tuple``, the delta-channel history), outermost calls only.
  Target: the Postgres median <= 1.5x the SQLite median. The two sessions take their turns
  in alternation (which goes first alternating too), so that the machine's load, which moves
  over minutes on a shared machine, weighs on both alike.
- ``sessions list`` with 10,000 sessions: a fresh process opens the store and lists the
  latest 50, as ``dcode sessions list`` does; timed from ``open_store`` to the rows (connecting
  and the schema check included; the interpreter's start-up and the store's imports apart,
  printed beside it: psycopg's alone is about 0.1 s). Target <= 150 ms on both.
- 20 processes, 5 turns each on sessions of their own, all at once against one Postgres:
  every turn saved (its 2 messages in the thread, its record in the turns), no error.
  Target: zero lost turns, zero errors.

The server: ``DCODE_DATABASE_URL`` (its role makes a database for each figure and drops it),
else one started here from Debian's PostgreSQL (``tests/support/postgres.py``), with
``fsync`` on (the tests turn it off): SQLite syncs each commit to disk, and so must Postgres
for the two figures to be compared.

Run: .venv/bin/python scripts/bench/session_store.py [--turns 200] [--sessions 10000]
     [--processes 20] [--process-turns 5] [--only turns|listing|crowd]
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import functools
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, closing, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcode.settings.config import ApprovalMode, Settings, WireApi  # noqa: E402
from dcode.settings.database import DATABASE_URL_ENV, database_location  # noqa: E402
from tests.support.model_server import ScriptedModelServer, reply, tool_call  # noqa: E402

RATIO_TARGET = 1.5
LIST_TARGET_MS = 150.0
MODEL = "openai:gpt-5.1"  # a large window: no compaction in 200 turns
FILE_TEXT = "".join(
    f"line {n:02d}: the quick brown fox jumps over the lazy dog\n" for n in range(55)
)
RECORD_METHODS = (
    "create",
    "get",
    "start_turn",
    "record_turn",
    "begin_turn",
    "turns",
    "record_before",
    "record_after",
    "latest_checkpoint_id",
    "read_thread",
    "task_threads",
)
SAVER_METHODS = ("aput", "aput_writes", "aget_tuple", "alist", "aget_delta_channel_history")
LISTED = """
import sys, time
began = time.perf_counter()
from pathlib import Path
from dcode.agent.store import open_store
from dcode.settings.config import Settings
home = Path(sys.argv[1])
url = sys.argv[2] or None
if url:
    import dcode.agent.store.postgres
else:
    import dcode.agent.store.sqlite
start = time.perf_counter()
rows = open_store(Settings(home=home, workspace=home, database_url=url)).list(limit=50)
assert len(rows) == 50
print((time.perf_counter() - start) * 1000, (start - began) * 1000)
"""


# -- the per-turn store cost ------------------------------------------------------------------

_depth: contextvars.ContextVar[int] = contextvars.ContextVar("depth", default=0)


class Meter:
    """Seconds spent in the store's methods, outermost calls only (one inside another, or a
    saver method calling another, counts once)."""

    def __init__(self) -> None:
        self.spent = 0.0

    def wrap_sync(self, target: object, name: str) -> None:
        method = getattr(target, name)

        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            token = _depth.set(_depth.get() + 1)
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                if _depth.get() == 1:
                    self.spent += time.perf_counter() - start
                _depth.reset(token)

        setattr(target, name, timed)

    def wrap_async(self, target: object, name: str) -> None:
        method = getattr(target, name)

        @functools.wraps(method)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            token = _depth.set(_depth.get() + 1)
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                if _depth.get() == 1:
                    self.spent += time.perf_counter() - start
                _depth.reset(token)

        setattr(target, name, timed)


def settings_for(home: Path, server: ScriptedModelServer, url: str | None) -> Settings:
    from dcode.settings.compaction_triggers import Threshold

    return Settings(
        home=home,
        workspace=home / "ws",
        model=MODEL,
        base_url=server.base_url,
        api=WireApi.CHAT,
        approve=ApprovalMode.ALL,
        max_retries=0,
        compact_at=Threshold.parse("100000 messages"),
        database_url=url,
    )


async def turn_costs(
    settings: dict[str, Settings], server: ScriptedModelServer, turns: int
) -> dict[str, list[float]]:
    """The store's milliseconds in each of ``turns`` turns of one session on each store of
    ``settings``, the sessions taking their turns in alternation."""
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine

    costs: dict[str, list[float]] = {kind: [] for kind in settings}
    async with AsyncExitStack() as stack:
        runners = {}
        for kind, each in settings.items():
            each.workspace.mkdir(parents=True, exist_ok=True)
            (each.workspace / "notes.txt").write_text(FILE_TEXT)
            engine = await stack.enter_async_context(await Engine.open(each))
            meter = Meter()
            for name in RECORD_METHODS:
                meter.wrap_sync(engine.store, name)
            for name in SAVER_METHODS:
                meter.wrap_async(engine.checkpointer, name)
            runners[kind] = (engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL), meter)
        for turn in range(turns):
            order = list(runners) if turn % 2 == 0 else list(reversed(runners))
            for kind in order:
                runner, meter = runners[kind]
                server.script(
                    reply(tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})]),
                    reply(f"turn {turn}: read the notes."),
                )
                meter.spent = 0.0
                async for event in runner.run_turn(f"turn {turn}: read the notes"):
                    if getattr(event, "is_error", False):
                        raise RuntimeError(f"{kind} turn {turn} failed: {event}")
                costs[kind].append(meter.spent * 1000)
    return costs


def per_turn(url: str, turns: int) -> None:
    with ScriptedModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        figures = {}
        stores = {"SQLite": None, "Postgres": url}
        settings = {kind: settings_for(Path(tmp) / kind, server, db) for kind, db in stores.items()}
        for kind, costs in asyncio.run(turn_costs(settings, server, turns)).items():
            figures[kind] = statistics.median(costs)
            print(
                f"  {kind:<8} store cost per turn: median {figures[kind]:.1f} ms, "
                f"p90 {sorted(costs)[int(len(costs) * 0.9)]:.1f} ms, first 10 {statistics.median(costs[:10]):.1f} ms, "
                f"last 10 {statistics.median(costs[-10:]):.1f} ms ({turns} turns)"
            )
    ratio = figures["Postgres"] / figures["SQLite"]
    verdict = "PASS" if ratio <= RATIO_TARGET else "FAIL"
    print(f"  Postgres / SQLite = {ratio:.2f}x; target <= {RATIO_TARGET}x: {verdict}")


# -- sessions list with 10,000 sessions ---------------------------------------------------------


def fill(settings: Settings, count: int) -> None:
    """``count`` sessions: the store makes its tables (and one session), the rest in bulk."""
    from dcode.agent.store import open_store

    store = open_store(settings)
    store.create("s0", settings.workspace, MODEL)
    store.close()
    now = time.time()
    rows = [
        (
            f"s{n:011d}",
            f"/work/p{n % 40}",
            MODEL,
            f"session {n}: tidy the greetings",
            now - n,
            now - n,
            8,
        )
        for n in range(1, count)
    ]
    insert = "INSERT INTO dcode_sessions (id, cwd, model, title, created, updated, message_count) VALUES "
    if settings.database_url is None:
        with closing(sqlite3.connect(settings.sessions_db)) as conn:
            conn.executemany(insert + "(?, ?, ?, ?, ?, ?, ?)", rows)
            conn.commit()
        return
    import psycopg

    with psycopg.connect(settings.database_url) as conn, conn.cursor() as cursor:
        cursor.executemany(insert + "(%s, %s, %s, %s, %s, %s, %s)", rows)


def listing(url: str, count: int, runs: int = 7) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for kind, database in (("SQLite", None), ("Postgres", url)):
            home = Path(tmp) / kind
            home.mkdir()
            fill(Settings(home=home, workspace=home, database_url=database), count)
            command = [sys.executable, "-c", LISTED, str(home), database or ""]
            timed = [
                [
                    float(x)
                    for x in subprocess.run(
                        command, capture_output=True, text=True, check=True, cwd=ROOT
                    ).stdout.split()
                ]
                for _ in range(runs)
            ]
            figures = sorted(listed for listed, _ in timed)
            imports = statistics.median(imported for _, imported in timed)
            median = statistics.median(figures)
            verdict = "PASS" if median <= LIST_TARGET_MS else "FAIL"
            print(
                f"  {kind:<8} sessions list of {count:,}: median {median:.0f} ms (min {figures[0]:.0f}, max {figures[-1]:.0f}, "
                f"{runs} processes; the store's modules' import apart: {imports:.0f} ms); target <= {LIST_TARGET_MS:.0f} ms: {verdict}"
            )


# -- 20 processes at once -----------------------------------------------------------------------


async def work(home: Path, url: str, base_url: str, turns: int) -> dict[str, Any]:
    """One process's turns in a new session: its id and the errors it met."""
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine

    settings = Settings(
        home=home,
        workspace=home,
        model=MODEL,
        base_url=base_url,
        api=WireApi.CHAT,
        approve=ApprovalMode.ALL,
        max_retries=0,
        database_url=url,
    )
    errors: list[str] = []
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        for turn in range(turns):
            async for event in runner.run_turn(f"turn {turn} of {os.getpid()}"):
                if getattr(event, "is_error", False):
                    errors.append(str(getattr(event, "error", event)))
    return {"session": runner.session_id, "errors": errors}


def crowd(url: str, processes: int, turns: int) -> None:
    from dcode.agent.store import open_store

    with ScriptedModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.script(reply("done").forever())
        start = time.perf_counter()
        procs = []
        for n in range(processes):
            home = Path(tmp) / f"p{n}"
            home.mkdir()
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--work",
                        str(home),
                        url,
                        server.base_url,
                        str(turns),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=ROOT,
                )
            )
        outputs = [proc.communicate(timeout=600) for proc in procs]
        took = time.perf_counter() - start
        store = open_store(Settings(home=Path(tmp), workspace=Path(tmp), database_url=url))
        errors, lost = 0, 0
        for proc, (out, err) in zip(procs, outputs, strict=True):
            if proc.returncode != 0 or not out.strip():
                errors, lost = errors + 1, lost + turns
                print(f"  a process failed: {err.strip().splitlines()[-1:]}")
                continue
            result = json.loads(out.strip().splitlines()[-1])
            errors += len(result["errors"])
            saved = store.read_thread(result["session"])
            kept = len(saved.messages) // 2 if saved else 0
            recorded = len(store.turns(result["session"]))
            lost += turns - min(kept, recorded)
        store.close()
    verdict = "PASS" if errors == 0 and lost == 0 else "FAIL"
    print(
        f"  {processes} processes x {turns} turns at once: {lost} lost turns, {errors} errors, "
        f"{took:.1f} s in all; target 0 and 0: {verdict}"
    )


# -- the server ---------------------------------------------------------------------------------


@contextmanager
def server_url() -> Iterator[str]:
    """A server whose role may create databases: ``DCODE_DATABASE_URL``'s, or one started here."""
    given = os.environ.get(DATABASE_URL_ENV)
    if given:
        yield given
        return
    from tests.support.postgres import start_cluster

    directory = Path(tempfile.mkdtemp(prefix="dcode-bench-pg-"))
    try:
        cluster, stop = start_cluster(directory)
        try:
            _with_fsync(directory, cluster.url)
            yield cluster.url
        finally:
            subprocess.run(stop, capture_output=True, timeout=60, check=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _with_fsync(directory: Path, url: str) -> None:
    """Restart the cluster ``start_cluster`` made with ``fsync`` on (the tests' runs without)."""
    from tests.support.postgres import _as_server_user, server_binaries

    binaries = server_binaries()
    assert binaries is not None
    port = url.rsplit(":", 1)[1].split("/", 1)[0]
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=on"
    command = [str(binaries / "pg_ctl"), "-D", str(directory / "data"), "-w", "-o", options]
    subprocess.run(
        _as_server_user([*command, "-l", str(directory / "server.log"), "restart"]),
        capture_output=True,
        timeout=120,
        check=True,
    )


def _each(url: str, name: str, step: Callable[[str], None]) -> None:
    """``step`` on a database of its own, so that each figure starts from an empty one."""
    import psycopg

    base = url.rsplit("/", 1)[0]
    database = f"{base}/{name}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database.rsplit("/", 1)[1]}"')
    try:
        step(database)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database.rsplit("/", 1)[1]}" WITH (FORCE)')


def _setting(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(f"SHOW {name}").fetchone()
    return str(row[0]) if row else "?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=20)
    parser.add_argument("--process-turns", type=int, default=5)
    parser.add_argument("--only", choices=("turns", "listing", "crowd"), help="one figure")
    parser.add_argument("--work", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.work:
        home, url, base_url, turns = args.work
        print(json.dumps(asyncio.run(work(Path(home), url, base_url, int(turns)))))
        return
    from dcode.library_logs import route_library_logs

    route_library_logs()
    with server_url() as url:
        print(
            f"server {database_location(url)} (fsync {_setting(url, 'fsync')}); {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
        )
        figures: dict[str, tuple[str, Callable[[str], None]]] = {
            "turns": ("per-turn store cost, one session:", lambda db: per_turn(db, args.turns)),
            "listing": ("sessions list:", lambda db: listing(db, args.sessions)),
            "crowd": (
                "many processes at once:",
                lambda db: crowd(db, args.processes, args.process_turns),
            ),
        }
        for name, (title, step) in figures.items():
            if args.only in (None, name):
                print(title)
                _each(url, name, step)


if __name__ == "__main__":
    main()
