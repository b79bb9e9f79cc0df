"""Benchmark: a 1 MB tool-call argument streamed in 9-byte deltas, through the real client.

The scripted server runs in its own process and sends a ``write_file`` call whose arguments come
as about 121,000 deltas, as fast as it can. For each wire (Chat Completions, Responses) it reports:

- the wire alone: a bare HTTP client reading the same stream (the server's own pace);
- dcode: the engine (OpenAI client, langchain, LangGraph, dcode's runner) from the start of the
  turn to the tool call running with its arguments complete, in wall time and in CPU time of
  this process (the server's CPU is not in it), and how many argument deltas reached the events;
- the TUI: the same turn in the app, through Textual's pilot, until the file is written.

Targets: dcode spends at most 2 s of CPU on the 1 MB argument (it was 37 s on two cores: every
delta cost some 330 µs, and langchain's final merge was quadratic); the TUI at most 2.5 s, the half
second more being the frames it draws meanwhile (about 60 a second, whatever the deltas). Wall
times depend on the server's pace and on the machine's load; CPU time is compared with the target.

Run: .venv/bin/python scripts/bench/stream.py [--size BYTES] [--delta BYTES] [--only chat|responses|tui]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402

from dcode.settings.config import ApprovalMode, Settings, WireApi  # noqa: E402
from tests.support.model_server import ModelServerProcess, reply, tool_call  # noqa: E402

TARGET_CPU = 2.0
TARGET_TUI_CPU = 2.5


@dataclass
class Figure:
    name: str
    wall: float
    cpu: float | None = None
    deltas: int | None = None
    ok: bool = True
    target: float = TARGET_CPU

    def line(self) -> str:
        cpu = (
            ""
            if self.cpu is None
            else f"   CPU {self.cpu:6.2f} s (target <= {self.target:.1f} s) {'PASS' if self.cpu <= self.target else 'MISS'}"
        )
        deltas = "" if self.deltas is None else f"   {self.deltas:,} delta events"
        return f"{self.name:<22} wall {self.wall:6.2f} s{cpu}{deltas}{'' if self.ok else '   WRONG ARGUMENTS'}"


def content_of(size: int) -> str:
    """Code-like text whose ``write_file`` arguments come to about ``size`` characters on the wire."""
    line = '    total += weights["a \\"quoted\\" key"]  # ✓\n'
    per_line = len(json.dumps(line)) - 2
    return line * max(1, size // per_line)


def big_call(content: str, delta: int):
    return reply(
        tool_calls=[tool_call("write_file", {"file_path": "big.txt", "content": content})],
        chunk_size=delta,
    )


async def wire_floor(base_url: str, api: str) -> float:
    path, body = (
        (
            "/chat/completions",
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
        )
        if api == "chat"
        else ("/responses", {"model": "m", "stream": True, "input": "x"})
    )
    async with httpx2.AsyncClient(timeout=None) as client:
        started = time.perf_counter()
        async with client.stream("POST", base_url + path, json=body) as response:
            async for _ in response.aiter_raw():
                pass
        return time.perf_counter() - started


async def through_engine(settings: Settings, content: str) -> Figure:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import ToolArgsDelta, ToolCallRunning

    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        started, cpu_started = time.perf_counter(), time.process_time()
        wall = cpu = 0.0
        deltas, args = 0, None
        async for event in runner.run_turn("write the big file"):
            match event:
                case ToolArgsDelta():
                    deltas += 1
                case ToolCallRunning(args=call_args) if not wall:
                    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
                    args = call_args
    ok = (
        args is not None
        and args.get("content") == content
        and (settings.workspace / "big.txt").read_text(encoding="utf-8") == content
    )
    return Figure(f"dcode ({settings.api})", wall, cpu, deltas, ok)


async def through_tui(settings: Settings, server: ModelServerProcess, content: str) -> Figure:
    from tests.test_tui_app_support import running_app

    target = settings.workspace / "big.txt"
    async with running_app(server, settings.workspace, settings.home, settings=settings) as harness:  # type: ignore[arg-type]
        started, cpu_started = time.perf_counter(), time.process_time()
        await harness.send("write the big file")
        await harness.until(
            lambda: target.exists() and not harness.app.busy,
            600,
            "the file and the end of the turn",
        )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return Figure(
        "TUI (chat)", wall, cpu, None, target.read_text(encoding="utf-8") == content, TARGET_TUI_CPU
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="characters of arguments")
    parser.add_argument("--delta", type=int, default=9, help="characters per argument delta")
    parser.add_argument("--only", choices=("chat", "responses", "tui"))
    args = parser.parse_args()
    content = content_of(args.size)
    arguments = json.dumps({"file_path": "big.txt", "content": content})
    print(
        f"write_file with {len(arguments):,} characters of arguments in {len(arguments) // args.delta:,} deltas "
        f"of {args.delta}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    parts = [args.only] if args.only else ["chat", "responses", "tui"]
    with tempfile.TemporaryDirectory() as tmp:
        for part in parts:
            work = Path(tmp) / part
            (work / "ws").mkdir(parents=True)
            api = WireApi.RESPONSES if part == "responses" else WireApi.CHAT
            steps = [
                big_call(content, args.delta),
                big_call(content, args.delta),
                reply("Written."),
            ]
            with ModelServerProcess(steps, workdir=work / "server") as server:
                floor = await wire_floor(server.base_url, api)
                settings = Settings(
                    home=work / "home",
                    workspace=work / "ws",
                    model="openai:bench-model",
                    base_url=server.base_url,
                    api=api,
                    approve=ApprovalMode.ALL,
                    max_retries=0,
                )
                if part == "tui":
                    figure = await through_tui(
                        replace(settings, approve=ApprovalMode.ALL), server, content
                    )
                else:
                    figure = await through_engine(settings, content)
            print(Figure(f"wire alone ({api})", floor).line())
            print(figure.line())


if __name__ == "__main__":
    asyncio.run(main())
