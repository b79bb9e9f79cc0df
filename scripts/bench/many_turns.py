"""Benchmark: what one turn costs the client, at the start of a session and after 1,000 turns.

Against the scripted model server (in this process, on loopback), one session ("long") is
taken to ``--turns`` turns (default 1,000) and a second one ("new"), in another directory of
the same ``$DCODE_HOME``, through its first hundred. Each turn is a short prompt and a short
answer; every fourth one first reads a 3 KB file with read_file. The model's window is dcode's
default for an unknown model (32k tokens), so a session compacts itself every eighty turns or
so, as a long real one does: the requests stay about the same size while the thread (and
sessions.db) grows.

Turns are run two ways, as people run them:
- in one process (``Engine`` and ``SessionRunner``, as the TUI holds them): all of the long
  session's turns in one process, and the new session's in another;
- one ``dcode -p -c`` process a turn (as a script does): ``--process-turns`` more of each
  session, each a resume of it at that size.
The new session's turns and the long session's last ones are run in alternation, so that both
figures see the same machine: on two busy cores the load moves more in ten minutes than any
difference measured here.

Two figures for each turn:
- wall: its wall time less the model's (for each request, the server's answer sent minus its
  arrival) and the tools' running time; for a process, from its ``turn_started`` to its exit
  (its start-up is reported apart);
- CPU: the client's own processor time over the turn (a process's all of it, start-up
  included).
Printed: the medians for the new session's first 100 turns and the long session's last 100,
then for the process turns, their ratios, and the size of sessions.db (with its WAL). The new
session's process turns come after its hundredth, when its history has passed the size from
which a process loads the token encoding for the compaction trigger (a one-time step of a few
tenths of a second, not a cost that grows).
Targets (2 cores): long/new <= 1.3x, in one process and per process. A run takes about nine
minutes on two busy cores (``--turns 300``: about three).

Run: .venv/bin/python scripts/bench/many_turns.py [--turns 1000] [--process-turns 10]
     [--profile DIR]  (pyinstrument, if installed: the last 50 alternated turns of each session)
     [--keep DIR]  (build the sessions there and leave them, to look into)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcode.agent.tools.spec import READ_FILE  # noqa: E402
from tests.support.model_server import ScriptedModelServer, reply, tool_call  # noqa: E402

TARGET_RATIO = 1.3
WINDOW = 100  # turns in each in-process median
TOOL_EVERY = 4
MODEL = "openai:bench-model"
FILE_TEXT = "".join(
    f"line {n}: the quick brown fox jumps over the lazy dog, again and again\n" for n in range(40)
)
SUMMARY = "SESSION INTENT: tidy the greetings.\nSUMMARY: greetings tidied, notes read.\nNEXT STEPS: more of the same."
SUMMARIZER = "[human]\n"  # how the summarizer's transcript starts (no prompt here has it)


def prompt(turn: int) -> str:
    return f"turn {turn}: make greeting {turn % 7} a little shorter"


def steps_for(turn: int) -> list[Any]:
    """What the model answers in ``turn`` (the summarizer's step answers any compaction)."""
    steps = (
        [reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": f"notes/{turn % 20}.txt"})])]
        if turn % TOOL_EVERY == 0
        else []
    )
    return [*steps, reply(f"Done with turn {turn}: greeting {turn % 7} is shorter now.")]


@dataclass(frozen=True, slots=True)
class TurnTimes:
    number: int
    start: float
    end: float
    tool: float
    cpu: float
    began: float = 0.0  # a process's turn_started; 0 in one process


# -- one process: the driver, run as a child of the bench ---------------------------------


async def drive(profile: Path | None, name: str) -> None:
    """The latest session of this directory (a new one if none), a turn for each number read
    on stdin; one JSON line each. With ``profile``, the turns after a ``profile`` line are
    profiled into ``profile/name.txt`` (and ``.html``)."""
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.settings.config import ApprovalMode, load_settings

    settings = load_settings(
        cli={"model": MODEL, "base_url": os.environ["BENCH_BASE_URL"], "approve": ApprovalMode.ALL}
    )
    profiler = None
    async with await Engine.open(settings) as engine:
        latest = engine.store.latest(cwd=settings.workspace)
        runner = engine.runner(
            HeadlessApprover(), session_id=latest.id if latest else None, mode=ApprovalMode.ALL
        )
        while line := (await asyncio.to_thread(sys.stdin.readline)).strip():
            if line == "profile":
                profiler = _profiler(profile)
                continue
            if profiler is not None:
                profiler.start()
            print(json.dumps(await _turn(runner, int(line))), flush=True)
            if profiler is not None:
                profiler.stop()
    if profiler is not None:
        _save(profiler, profile, name)


async def _turn(runner: Any, turn: int) -> dict[str, Any]:
    start, cpu, tool, running, errors = time.monotonic(), time.process_time(), 0.0, {}, []
    async with aclosing(runner.run_turn(prompt(turn))) as events:
        async for event in events:
            match event.type:
                case "tool_call_running":
                    running[event.call_id] = time.monotonic()
                case "tool_call_finished" if event.call_id in running:
                    tool += time.monotonic() - running.pop(event.call_id)
                case "error":
                    errors.append(event.message)
    end, cpu = time.monotonic(), time.process_time() - cpu
    return {"turn": turn, "start": start, "end": end, "tool": tool, "cpu": cpu, "errors": errors}


def _profiler(profile: Path | None) -> Any:
    if profile is None:
        return None
    from pyinstrument import Profiler

    return Profiler(interval=0.0005, async_mode="disabled")


def _save(profiler: Any, folder: Path | None, name: str) -> None:
    assert folder is not None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.txt").write_text(profiler.output_text(unicode=False, show_all=False))
    (folder / f"{name}.html").write_text(profiler.output_html())


class Driver:
    """A session's turns in one process of its own (``drive``), one at a time."""

    def __init__(
        self,
        server: ScriptedModelServer,
        workspace: Path,
        env: dict[str, str],
        profile: Path | None,
        name: str,
    ) -> None:
        self.server = server
        argv = [sys.executable, __file__, "--drive", name] + (
            ["--profile", str(profile)] if profile else []
        )
        self.proc = subprocess.Popen(
            argv,
            cwd=workspace,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def turn(self, turn: int) -> TurnTimes:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.server.script(*steps_for(turn))
        self.proc.stdin.write(f"{turn}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(
                f"the driver failed: {self.proc.stderr.read().strip()[-1500:] if self.proc.stderr else ''}"
            )
        data = json.loads(line)
        for error in data["errors"]:
            print(f"  turn {turn}: error: {error}", file=sys.stderr)
        return TurnTimes(turn, data["start"], data["end"], data["tool"], data["cpu"])

    def profile(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("profile\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        if self.proc.wait(timeout=120) != 0:
            raise SystemExit(
                f"the driver failed: {self.proc.stderr.read().strip()[-1500:] if self.proc.stderr else ''}"
            )


# -- a process a turn: dcode -p -c ----------------------------------------------------------


def one_process(
    server: ScriptedModelServer, workspace: Path, env: dict[str, str], turn: int
) -> TurnTimes:
    server.script(*steps_for(turn))
    dcode = Path(sys.executable).with_name("dcode")
    argv = [
        str(dcode),
        "-p",
        prompt(turn),
        "-m",
        MODEL,
        "--base-url",
        env["BENCH_BASE_URL"],
        "--approve",
        "all",
        "--output-format",
        "stream-json",
    ]
    if turn > 1:
        argv.append("-c")
    start = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    began, tool, running = 0.0, 0.0, {}

    def read_events() -> None:
        nonlocal began, tool
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.monotonic()
            event = json.loads(line)
            match event["type"]:
                case "turn_started":
                    began = now
                case "tool_call_running":
                    running[event["call_id"]] = now
                case "tool_call_finished" if event["call_id"] in running:
                    tool += now - running.pop(event["call_id"])

    reader = threading.Thread(target=read_events, daemon=True)
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.monotonic()
    reader.join(10)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(
            f"dcode -p failed at turn {turn}: {proc.stderr.read().decode().strip()[-800:] if proc.stderr else ''}"
        )
    return TurnTimes(turn, start, end, tool, usage.ru_utime + usage.ru_stime, began)


# -- figures ------------------------------------------------------------------------------


def wall_ms(server: ScriptedModelServer, times: list[TurnTimes]) -> list[float]:
    """Each turn's client wall time (a process's from its turn_started)."""
    answered = dict(server.answered)
    requests = [(r.received_at, answered[r.index]) for r in server.requests if r.index in answered]
    figures = []
    for t in times:
        model = sum(sent - arrived for arrived, sent in requests if t.start <= arrived <= t.end)
        figures.append(((t.end - (t.began or t.start)) - model - t.tool) * 1000)
    return figures


def cpu_ms(times: list[TurnTimes]) -> list[float]:
    return [t.cpu * 1000 for t in times]


def startup_ms(times: list[TurnTimes]) -> list[float]:
    return [(t.began - t.start) * 1000 for t in times]


def verdict(label: str, new: list[float], long: list[float], *, target: bool = True) -> bool:
    a, b = statistics.median(new), statistics.median(long)
    ratio = b / a if a else float("inf")
    ok = ratio <= TARGET_RATIO
    judged = f"(target <= {TARGET_RATIO}x) {'PASS' if ok else 'FAIL'}" if target else ""
    print(f"  {label:<36} new {a:8.1f} ms   long {b:8.1f} ms   {ratio:5.2f}x {judged}")
    return ok or not target


def db_size(home: Path) -> float:
    files = [home / "sessions.db", home / "sessions.db-wal"]
    return sum(f.stat().st_size for f in files if f.exists()) / 2**20


@dataclass
class Run:
    new: list[TurnTimes]
    long: list[TurnTimes]
    new_processes: list[TurnTimes]
    long_processes: list[TurnTimes]
    first: TurnTimes


def sessions(
    args: argparse.Namespace, server: ScriptedModelServer, work: Path, env: dict[str, str]
) -> Run:
    long_ws, new_ws = work / "long", work / "new"
    for workspace in (long_ws, new_ws):
        (workspace / "notes").mkdir(parents=True)
        for i in range(20):
            (workspace / "notes" / f"{i}.txt").write_text(FILE_TEXT)
    alternated = args.turns - WINDOW + 1  # the long session's first turn run beside the new one's
    first = one_process(server, long_ws, env, 1)
    long = Driver(server, long_ws, env, args.profile, "long")
    for turn in range(2, alternated):
        long.turn(turn)
        if turn % 100 == 0:
            print(f"  ... turn {turn}", file=sys.stderr, flush=True)
    one_process(server, new_ws, env, 1)
    new = Driver(server, new_ws, env, args.profile, "new")
    new_times, long_times = [], []
    for k in range(WINDOW):
        if k == WINDOW - 50:
            new.profile()
            long.profile()
        new_times.append(new.turn(2 + k))
        long_times.append(long.turn(alternated + k))
    new.close()
    long.close()
    new_processes, long_processes = [], []
    for k in range(args.process_turns):
        new_processes.append(one_process(server, new_ws, env, WINDOW + 2 + k))
        long_processes.append(one_process(server, long_ws, env, args.turns + 1 + k))
    return Run(new_times, long_times, new_processes, long_processes, first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--turns", type=int, default=1000, help="turns of the long session in one process"
    )
    parser.add_argument(
        "--process-turns",
        type=int,
        default=10,
        help="dcode -p -c turns of each session after that (0: none)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="pyinstrument profiles of the alternated turns into this folder",
    )
    parser.add_argument(
        "--keep", type=Path, help="build the sessions in this folder (new or empty) and keep it"
    )
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        asyncio.run(drive(args.profile, args.drive))
        return 0
    if args.turns < 2 * WINDOW:
        parser.error(f"--turns must be at least {2 * WINDOW}")
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedModelServer(reply(SUMMARY, repeat=True).answering(SUMMARIZER)) as server,
    ):
        server.keep_bodies = False
        work = args.keep or Path(tmp)
        env = {
            **os.environ,
            "DCODE_HOME": str(work / "home"),
            "OPENAI_API_KEY": "bench",
            "BENCH_BASE_URL": server.base_url,
        }
        run = sessions(args, server, work, env)
        compactions = sum(
            1 for r in server.requests if r.step is not None and r.step.when == SUMMARIZER
        )
        figures = {
            name: wall_ms(server, getattr(run, name))
            for name in ("new", "long", "new_processes", "long_processes")
        }
        first_wall, calls, size = (
            wall_ms(server, [run.first])[0],
            len(server.requests),
            db_size(work / "home"),
        )
    print(
        f"{args.turns} + {WINDOW + 1} turns in two sessions (every {TOOL_EVERY}th with a read_file), {calls} model calls, "
        f"{compactions} compactions; {os.cpu_count()} cores, load {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    )
    span = f"turns 2-{WINDOW + 1} | {args.turns - WINDOW + 1}-{args.turns}"
    ok = verdict(f"one process, wall ({span})", figures["new"], figures["long"])
    ok &= verdict("one process, CPU", cpu_ms(run.new), cpu_ms(run.long))
    if args.process_turns:
        ok &= verdict(
            "dcode -p -c, wall of the turn", figures["new_processes"], figures["long_processes"]
        )
        verdict(
            "dcode -p -c, wall of its start-up",
            startup_ms(run.new_processes),
            startup_ms(run.long_processes),
            target=False,
        )
        ok &= verdict(
            "dcode -p -c, CPU of the whole process",
            cpu_ms(run.new_processes),
            cpu_ms(run.long_processes),
        )
    print(
        f"  turn 1 (dcode -p, a new session): start-up {startup_ms([run.first])[0]:.0f} ms, the turn {first_wall:.0f} ms, CPU {run.first.cpu * 1000:.0f} ms"
    )
    print(f"  sessions.db {size:.1f} MB; whole run {time.perf_counter() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
