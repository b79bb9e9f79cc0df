"""Benchmark: what an empty ``PreToolUse`` + ``PostToolUse`` pair of hooks adds to each tool call.

Two measures, each the median of several runs:
- the pair alone: ``Hooks.fire`` for both events with a hook that reads its stdin and exits 0
  (``cat > /dev/null``), as the middleware fires them around a call;
- through the real loop: a headless turn of N ``read_file`` calls against the scripted model
  server (in-process, real ChatOpenAI, real SQLite), with and without the pair; the difference
  per call, and the time the calls waited on their hooks (``hook_finished``'s ``duration_ms``,
  summed per call: less noisy than the difference of two wall times on a loaded machine).

Target: <= 20 ms per tool call.

Run: .venv/bin/python scripts/bench/hooks.py [--calls N] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dcode.agent.hooks.runner import Hooks  # noqa: E402
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless  # noqa: E402
from dcode.settings.config import ApprovalMode, Settings, WireApi  # noqa: E402
from dcode.settings.hook_sources import HookCommand  # noqa: E402
from tests.support.model_server import ScriptedModelServer, reply, tool_call  # noqa: E402

TARGET_MS = 20.0
EMPTY = "cat > /dev/null"


def pair(source: str = "bench") -> tuple[HookCommand, ...]:
    return (
        HookCommand("PreToolUse", "", EMPTY, 60.0, source),
        HookCommand("PostToolUse", "", EMPTY, 60.0, source),
    )


async def pair_alone(workspace: Path, rounds: int) -> float:
    """Milliseconds for one Pre + Post firing, the median of ``rounds``."""
    hooks = Hooks(pair(), workspace=workspace)
    payload = {"session_id": "bench", "tool_name": "Read", "tool_input": {"file_path": "a"}}
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await hooks.fire("PreToolUse", payload, lambda _e: None, target="read_file")
        await hooks.fire(
            "PostToolUse", {**payload, "tool_response": "x"}, lambda _e: None, target="read_file"
        )
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def turn_seconds(
    settings: Settings, server: ScriptedModelServer, calls: int, waited: list[float] | None = None
) -> float:
    steps = [
        reply(tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})]) for _ in range(calls)
    ]
    server.script(*steps, reply("done"))
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    code = await run_headless(
        settings,
        HeadlessRequest(prompt="read", output_format=OutputFormat.STREAM_JSON),
        out=out,
        err=err,
    )
    elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"the turn failed: {err.getvalue()}")
    if waited is not None:
        events = [json.loads(line) for line in out.getvalue().splitlines()]
        hooked = [e["duration_ms"] for e in events if e["type"] == "hook_finished"]
        waited.append(sum(hooked) / calls)
    return elapsed


async def through_the_loop(scratch: Path, calls: int, runs: int) -> tuple[float, float, float]:
    """(seconds per turn without hooks, with the pair, milliseconds a call waited on its
    hooks), medians of ``runs`` turns each."""
    workspace, home = scratch / "ws", scratch / "home"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    os.environ["DCODE_HOME"] = str(home)
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")
    with ScriptedModelServer() as server:
        base = Settings(
            home=home,
            workspace=workspace,
            model="openai:test-model",
            base_url=server.base_url,
            api=WireApi.CHAT,
            approve=ApprovalMode.EDITS,
        )
        hooked = replace(base, hooks=pair())
        plain_times, hooked_times, waited = [], [], []
        for _ in range(runs):  # interleaved, so that load on the machine hits both alike
            plain_times.append(await turn_seconds(base, server, calls))
            hooked_times.append(await turn_seconds(hooked, server, calls, waited))
    return (
        statistics.median(plain_times),
        statistics.median(hooked_times),
        statistics.median(waited),
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        alone = await pair_alone(Path(scratch), rounds=30)
        plain, hooked, waited = await through_the_loop(Path(scratch), args.calls, args.runs)
    per_call = (hooked - plain) / args.calls * 1000
    verdict = "ok" if waited <= TARGET_MS else "OVER"
    print(f"empty PreToolUse + PostToolUse pair ({EMPTY!r}):")
    print(f"  the pair alone:       {alone:6.1f} ms per tool call")
    print(
        f"  through the loop:     {per_call:6.1f} ms per tool call "
        f"({args.calls} calls: {plain:.2f} s without hooks, {hooked:.2f} s with)"
    )
    print(f"  waited on the hooks:  {waited:6.1f} ms per tool call (in the loop)")
    print(f"  target:               <= {TARGET_MS:.0f} ms per tool call  {verdict}")
    print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    asyncio.run(main())
