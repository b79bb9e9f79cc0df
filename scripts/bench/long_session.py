"""Benchmark: the client's own time between two model calls, as the history grows.

One headless turn (``dcode -p``, a fresh process) runs a long tool loop against the scripted
model server (in this process, on loopback): each step reads a 3 KB file, so each call adds an
assistant message and a tool result to the history. For every call the server records when the
request arrived and when its answer was completely sent; the stream-json events give the tool's
own running time. The overhead of call k is

    (request k+1 arrived) - (answer k sent) - (tool time between them)

which is what dcode, langchain, LangGraph and the OpenAI SDK spend on one step: merging the
stream, checkpointing, the middleware, and building and serializing the next request.

Reported at about 10, 100, 300 and 600 messages in the history (the median of the calls around
each point), plus the peak RSS of the dcode process.
Targets (2 cores): at 600 messages <= 2x the figure at 10 messages, and <= 50 ms.

Run: .venv/bin/python scripts/bench/long_session.py [--messages 600]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcode.agent.tools.spec import READ_FILE  # noqa: E402
from tests.support.model_server import ScriptedModelServer, reply, tool_call  # noqa: E402

POINTS = (10, 100, 300, 600)
TARGET_MS = 50.0
TARGET_RATIO = 2.0
FILE_TEXT = "".join(
    f"line {n}: the quick brown fox jumps over the lazy dog, again and again\n" for n in range(40)
)


def run(messages: int, profile: Path | None = None) -> tuple[dict[int, float], float, int]:
    steps = messages // 2 + 1
    script = [
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": f"notes/{i % 20}.txt"})])
        for i in range(steps)
    ]
    script.append(reply("Read them all."))
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer(*script) as server:
        work = Path(tmp)
        (work / "ws" / "notes").mkdir(parents=True)
        for i in range(20):
            (work / "ws" / "notes" / f"{i}.txt").write_text(FILE_TEXT)
        env = {**os.environ, "DCODE_HOME": str(work / "home"), "OPENAI_API_KEY": "bench"}
        dcode = Path(sys.executable).with_name("dcode")
        argv = [
            str(dcode),
            "-p",
            "read the notes",
            "-m",
            "openai:bench-model",
            "--base-url",
            server.base_url,
            "--approve",
            "all",
            "--output-format",
            "stream-json",
            "--max-turns",
            str(steps + 5),
        ]
        if profile is not None:  # py-spy's collapsed stacks of the dcode process
            argv = [
                "py-spy",
                "record",
                "--format",
                "raw",
                "--rate",
                "250",
                "-o",
                str(profile),
                "--",
                *argv,
            ]
        proc = subprocess.Popen(
            argv, cwd=work / "ws", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        tool_times: list[float] = []
        started: dict[str, float] = {}

        def read_events() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                now = time.monotonic()
                if not line.startswith(b"{"):
                    continue  # py-spy's own lines, when profiling
                event = json.loads(line)
                if event["type"] == "tool_call_running":
                    started[event["call_id"]] = now
                elif event["type"] == "tool_call_finished" and event["call_id"] in started:
                    tool_times.append(now - started.pop(event["call_id"]))

        reader = threading.Thread(target=read_events, daemon=True)
        reader.start()
        _, status, usage = os.wait4(proc.pid, 0)
        reader.join(10)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"dcode failed: {err.strip()[-800:]}")
        arrived = [r.received_at for r in server.requests]
        answered = dict(server.answered)
    overhead: dict[int, float] = {}
    for k in range(len(arrived) - 1):
        tool = tool_times[k] if k < len(tool_times) else 0.0
        overhead[1 + 2 * (k + 1)] = arrived[k + 1] - answered[k] - tool  # messages in request k+1
    return overhead, usage.ru_maxrss / 1024, len(arrived)


def around(overhead: dict[int, float], point: int, width: int = 10) -> float:
    near = [v for m, v in overhead.items() if abs(m - point) <= width]
    return statistics.median(near) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=POINTS[-1], help="history length to reach")
    parser.add_argument(
        "--profile",
        type=Path,
        help="record the dcode process with py-spy (collapsed stacks) into this file",
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    overhead, rss, calls = run(args.messages, args.profile)
    wall = time.perf_counter() - started
    print(
        f"one turn, {calls} model calls, each step a read_file of a 3 KB file; {os.cpu_count()} cores, load {load:.1f}"
    )
    figures = {point: around(overhead, point) for point in POINTS if point <= max(overhead)}
    for point, ms in figures.items():
        print(f"  {point:>4} messages   client overhead per call {ms:7.1f} ms")
    base, last = figures[POINTS[0]], figures[max(figures)]
    ratio = last / base if base else float("inf")
    ok_ratio, ok_abs = ratio <= TARGET_RATIO, last <= TARGET_MS
    print(
        f"at {max(figures)} messages: {ratio:.2f}x the figure at {POINTS[0]} (target <= {TARGET_RATIO:.0f}x) "
        f"{'PASS' if ok_ratio else 'FAIL'}; {last:.1f} ms (target <= {TARGET_MS:.0f} ms) {'PASS' if ok_abs else 'FAIL'}"
    )
    print(f"peak RSS of dcode {rss:.0f} MB; whole run {wall:.1f} s")
    return 0 if ok_ratio and ok_abs else 1


if __name__ == "__main__":
    raise SystemExit(main())
