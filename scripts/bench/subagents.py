"""Benchmark: four subagents at once, each a slow three-step loop, against each one alone.

Each run is the real binary (``dcode -p``, a fresh process) against the scripted model server (in
this process, on loopback). The parent's first answer makes ``task`` calls; each subagent then
makes two tool calls and answers, every answer streamed slowly (the server's pace, not dcode's),
and the parent sums up. The stream-json events are read as they come, and timed here.

- Wall time: from the first subagent's start to the last one's end. Four at once must take at
  most 1.3x the slowest of the four run alone.
- Memory: the peak RSS of the process with four subagents, against one; at most 10 MB more for
  each subagent beyond the first.

The TUI's frame time while four subagents stream is measured by ``scripts/bench/tui.py``'s
``subagents`` figure.

Run: .venv/bin/python scripts/bench/subagents.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.model_server import ScriptedModelServer, reply, tool_call  # noqa: E402

TARGET_RATIO = 1.3
TARGET_MB = 10.0
PROMPT = "survey the project"
JOBS = tuple(f"job {n}: read the notes and summarize part {n}" for n in range(1, 5))
CHUNKS = (30, 36, 42, 48)  # each job's answers, in pieces of CHUNK_SIZE characters
CHUNK_SIZE, CHUNK_DELAY = 4, 0.01


def job_steps(job: str, chunks: int) -> list:
    text = "x" * (chunks * CHUNK_SIZE)
    slow = {"chunk_size": CHUNK_SIZE, "chunk_delay": CHUNK_DELAY}
    return [
        reply(text, tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})], **slow).answering(job),
        reply(text, tool_calls=[tool_call("grep", {"pattern": "line", "path": "."})], **slow).answering(job),
        reply(f"{job}: done. {text}", **slow).answering(job),
    ]


def script(jobs: tuple[str, ...], chunks: tuple[int, ...]) -> list:
    calls = [tool_call("task", {"description": job}, call_id=f"call_{n}") for n, job in enumerate(jobs, 1)]
    steps = [reply(tool_calls=calls).answering(PROMPT)]
    for job, count in zip(jobs, chunks):
        steps.extend(job_steps(job, count))
    steps.append(reply("All four parts are summarized.").answering(PROMPT))
    return steps


@dataclass(frozen=True)
class Run:
    wall: float  # first subagent start to last subagent end, seconds
    peak_mb: float
    ok: bool


def run(jobs: tuple[str, ...], chunks: tuple[int, ...]) -> Run:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer(*script(jobs, chunks)) as server:
        work = Path(tmp)
        (work / "ws").mkdir()
        (work / "ws" / "notes.txt").write_text("".join(f"line {n}\n" for n in range(200)))
        env = {**os.environ, "DCODE_HOME": str(work / "home"), "OPENAI_API_KEY": "bench"}
        dcode = Path(sys.executable).with_name("dcode")
        argv = [str(dcode), "-p", PROMPT, "-m", "openai:bench-model", "--base-url", server.base_url,
                "--approve", "all", "--output-format", "stream-json"]
        process = subprocess.Popen(argv, cwd=work / "ws", env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert process.stdout is not None
        starts, ends, ok = [], [], False
        for line in process.stdout:
            event = json.loads(line)
            match event.get("type"):
                case "subagent_started":
                    starts.append(time.perf_counter())
                case "subagent_finished":
                    ends.append(time.perf_counter())
                    ok = event["status"] == "ok"
                case "result":
                    ok = ok and not event["is_error"] and len(ends) == len(jobs)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        return Run(max(ends) - min(starts) if starts and ends else float("nan"), usage.ru_maxrss / 1024, ok and process.returncode == 0)


def main() -> int:
    alone = [run((job,), (count,)) for job, count in zip(JOBS, CHUNKS)]
    together = run(JOBS, CHUNKS)
    slowest = max(r.wall for r in alone)
    ratio = together.wall / slowest
    one = alone[CHUNKS.index(max(CHUNKS))].peak_mb
    per_subagent = (together.peak_mb - one) / (len(JOBS) - 1)
    for job, r in zip(JOBS, alone):
        print(f"alone   {job[:5]:<6} {r.wall:6.2f} s   peak RSS {r.peak_mb:6.1f} MB{'' if r.ok else '   FAILED'}")
    print(f"4 at once      {together.wall:6.2f} s   peak RSS {together.peak_mb:6.1f} MB{'' if together.ok else '   FAILED'}")
    wall_ok = ratio <= TARGET_RATIO
    mem_ok = per_subagent <= TARGET_MB
    print(f"wall time      {ratio:.2f}x the slowest alone (target <= {TARGET_RATIO}x) {'PASS' if wall_ok else 'MISS'}")
    print(f"memory         {per_subagent:+.1f} MB per extra subagent (target <= {TARGET_MB:.0f} MB) {'PASS' if mem_ok else 'MISS'}")
    return 0 if wall_ok and mem_ok and together.ok and all(r.ok for r in alone) else 1


if __name__ == "__main__":
    raise SystemExit(main())
