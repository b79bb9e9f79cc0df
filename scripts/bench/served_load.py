"""Benchmark: 20 sessions x 5 turns at once on one server, its sessions in PostgreSQL.

On each server that is available (``langgraph dev`` through ``dcode serve``; Aegra with Redis
when ``DCODE_TEST_AEGRA`` names it, as ``.ci/run`` does), dcode's graph is served with its
checkpoints in PostgreSQL (``dcode serve``: ``DCODE_DATABASE_URL``; Aegra: its own database),
and ``langgraph_sdk`` clients run every session's turns one after another, all sessions at
once. Each session's model answers are its own (the scripted model server matches them by the
session's first message), so a turn that reached another session would show.

Printed beside its target: lost turns (a run that failed, or a thread that does not hold its
2 x turns messages in order with its own answers; target 0), the turns per second, the p50 and
p95 turn time (from sending a turn to its run's end), and the jobs per worker (target >= 20).

The PostgreSQL server: ``DCODE_TEST_POSTGRES_URL``, else one started here from Debian's package
(``tests/support/postgres.py``).

Run: .venv/bin/python scripts/bench/served_load.py [--sessions 20] [--turns 5]
     [--server langgraph-dev|aegra|both]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcode.cli.serve import JOBS_PER_WORKER  # noqa: E402
from dcode.settings.database import DATABASE_URL_ENV  # noqa: E402
from tests.support import aegra_server  # noqa: E402
from tests.support.langgraph_server import ServedDcode, serve_dcode  # noqa: E402
from tests.support.model_server import ScriptedModelServer, reply  # noqa: E402
from tests.support.postgres import URL_VARIABLE, start_cluster  # noqa: E402

JOBS_TARGET = 20
CONTEXT = {"mode": "edits"}


@dataclass
class Load:
    seconds: float = 0.0
    turn_times: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """One line per lost turn."""


@contextmanager
def postgres() -> Iterator[str]:
    given = os.environ.get(URL_VARIABLE)
    if given:
        yield given
        return
    directory = Path(tempfile.mkdtemp(prefix="dcode-bench-pg-"))
    cluster, stop = start_cluster(directory)
    try:
        yield cluster.url
    finally:
        subprocess.run(stop, capture_output=True, timeout=60, check=False)
        shutil.rmtree(directory, ignore_errors=True)


def new_database(cluster_url: str) -> str:
    import psycopg

    name = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(cluster_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return cluster_url.rsplit("/", 1)[0] + "/" + name


def script(model: ScriptedModelServer, sessions: int, turns: int) -> None:
    for s in range(sessions):
        model.script(reply(f"answer for s{s}").answering(f"s{s} turn 0").times(turns))


async def session(served: ServedDcode, s: int, turns: int, load: Load) -> None:
    client = served.client()
    thread = str((await client.threads.create())["thread_id"])
    for t in range(turns):
        began = time.perf_counter()
        try:
            await client.runs.wait(
                thread,
                served.assistant,
                input={"messages": [{"role": "user", "content": f"s{s} turn {t}"}]},
                context=CONTEXT,
                raise_error=True,
            )
        except Exception as exc:  # noqa: BLE001 - any failure is a lost turn, counted and shown
            load.failed.append(f"s{s} turn {t}: {type(exc).__name__}: {exc}"[:200])
            continue
        load.turn_times.append(time.perf_counter() - began)
    await check_thread(served, thread, s, turns, load)


async def check_thread(served: ServedDcode, thread: str, s: int, turns: int, load: Load) -> None:
    state: Any = await served.client().threads.get_state(thread)
    got = [(m["type"], m["content"]) for m in state["values"].get("messages", [])]
    want: list[tuple[str, str]] = []
    for t in range(turns):
        want += [("human", f"s{s} turn {t}"), ("ai", f"answer for s{s}")]
    if got != want:
        load.failed.append(f"s{s}: its thread holds {len(got)} messages, not the {len(want)} sent")


async def run_load(served: ServedDcode, sessions: int, turns: int) -> Load:
    load = Load()
    began = time.perf_counter()
    await asyncio.gather(*(session(served, s, turns, load) for s in range(sessions)))
    load.seconds = time.perf_counter() - began
    return load


def report(name: str, load: Load, sessions: int, turns: int, jobs: str, started: float) -> None:
    total = sessions * turns
    done = len(load.turn_times)
    times = sorted(load.turn_times)
    p95 = times[max(0, round(0.95 * len(times)) - 1)] if times else float("nan")
    print(f"\n{name}: {sessions} sessions x {turns} turns at once (ready in {started:.1f} s)")
    print(f"  lost turns        {len(load.failed):>8}      target 0")
    for line in load.failed[:5]:
        print(f"    {line}")
    print(f"  turns done        {done:>8}/{total}")
    print(f"  turns per second  {done / load.seconds:>8.1f}      ({load.seconds:.1f} s in all)")
    p50 = statistics.median(times) if times else float("nan")
    print(f"  turn time p50     {p50 * 1000:>8.0f} ms")
    print(f"  turn time p95     {p95 * 1000:>8.0f} ms")
    print(f"  jobs per worker   {jobs:>8}      target >= {JOBS_TARGET}")


def bench_langgraph_dev(cluster_url: str, sessions: int, turns: int) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="dcode-bench-served-") as root,
        ScriptedModelServer() as model,
        serve_dcode(Path(root), model, {DATABASE_URL_ENV: new_database(cluster_url)}) as served,
    ):
        script(model, sessions, turns)
        load = asyncio.run(run_load(served, sessions, turns))
        report(
            "langgraph dev (dcode serve)",
            load,
            sessions,
            turns,
            str(JOBS_PER_WORKER),
            served.started_in,
        )


def bench_aegra(cluster_url: str, sessions: int, turns: int) -> None:
    try:
        aegra = aegra_server.find_aegra()
    except aegra_server.AegraMissing as missing:
        print(f"\nAegra: skipped: {missing}")
        return
    with (
        tempfile.TemporaryDirectory(prefix="dcode-bench-aegra-") as root,
        ScriptedModelServer() as model,
        aegra_server.serve_on_aegra(Path(root), aegra, cluster_url, model) as served,
    ):
        script(model, sessions, turns)
        load = asyncio.run(run_load(served, sessions, turns))
        jobs = f"{aegra_server.JOBS_PER_WORKER}"
        report("Aegra (Postgres + Redis)", load, sessions, turns, jobs, served.started_in)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--server", choices=("langgraph-dev", "aegra", "both"), default="both")
    args = parser.parse_args()
    with postgres() as cluster_url:
        if args.server in ("langgraph-dev", "both"):
            bench_langgraph_dev(cluster_url, args.sessions, args.turns)
        if args.server in ("aegra", "both"):
            bench_aegra(cluster_url, args.sessions, args.turns)


if __name__ == "__main__":
    main()
