"""Benchmark: `dcode -p` wall time and peak RSS against the scripted model server.

Two cases, each the median of several runs in fresh processes:
- a one-line answer (targets: <= 3.0 s and <= 140 MB on 2 cores);
- a 4-step tool loop: write_file, read_file, edit_file, then the answer.

Each run also reports its CPU time (user + sys), which other work on the machine moves far
less than the wall time; the load average is printed with the results.

dcode runs with its bytecode cached, as an installed dcode has it (pip compiles it): the
cache is a temporary ``PYTHONPYCACHEPREFIX`` filled by one unmeasured run first, so nothing is
written beside the sources even where ``PYTHONDONTWRITEBYTECODE`` is set. ``--compile``
measures the other case, every module compiled from source on every run (what a checkout run
with ``PYTHONDONTWRITEBYTECODE=1`` pays: about 0.3 s more).

Run: .venv/bin/python scripts/bench/headless.py [--runs N] [--compile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.model_server import reply, tool_call  # noqa: E402

TARGETS = {"one-liner": (3.0, 140.0)}


def one_liner() -> list[dict]:
    return [reply("Hello from the scripted model.").to_dict()]


def tool_loop() -> list[dict]:
    return [
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": "notes.txt", "content": "alpha\nbeta\n"})
            ]
        ).to_dict(),
        reply(tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})]).to_dict(),
        reply(
            tool_calls=[
                tool_call(
                    "edit_file",
                    {"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"},
                )
            ]
        ).to_dict(),
        reply("Done: notes.txt now says alpha, gamma.").to_dict(),
    ]


def start_server(script: list[dict], work: Path) -> tuple[subprocess.Popen, str]:
    script_path = work / "script.json"
    port_file = work / "port"
    script_path.write_text(json.dumps(script))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.model_server",
            "--script",
            str(script_path),
            "--port-file",
            str(port_file),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text().strip():
            value = port_file.read_text().strip()
            url = value if value.startswith("http") else f"http://127.0.0.1:{value}/v1"
            return proc, url
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError("the scripted server did not start")


def bytecode_env(pycache: Path | None) -> dict[str, str]:
    """The environment for dcode's runs: with ``pycache``, bytecode is read and written there;
    without, as the caller's environment says."""
    env = dict(os.environ)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run_once(script: list[dict], base_env: dict[str, str]) -> tuple[float, float, float]:
    """One run: its wall time (s), peak RSS (MB) and CPU time (user + sys, s)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "ws").mkdir()
        server, url = start_server(script, work)
        try:
            env = {**base_env, "DCODE_HOME": str(work / "home"), "OPENAI_API_KEY": "bench"}
            dcode = Path(sys.executable).with_name("dcode")
            argv = [
                str(dcode),
                "-p",
                "say hello",
                "-m",
                "openai:bench-model",
                "--base-url",
                url,
                "--approve",
                "all",
            ]
            started = time.perf_counter()
            proc = subprocess.Popen(
                argv, cwd=work / "ws", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            out = proc.stdout.read().decode() if proc.stdout else ""
            err = proc.stderr.read().decode() if proc.stderr else ""
            if proc.returncode != 0:
                raise RuntimeError(f"dcode exited {proc.returncode}: {err.strip() or out.strip()}")
            return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
        finally:
            server.kill()
            server.wait()


def measure(name: str, script: list[dict], runs: int, env: dict[str, str]) -> None:
    results = [run_once(script, env) for _ in range(runs)]
    wall = statistics.median(r[0] for r in results)
    rss = statistics.median(r[1] for r in results)
    cpu = statistics.median(r[2] for r in results)
    target = TARGETS.get(name)
    wall_target = f"target <= {target[0]:.1f} s" if target else "no target"
    rss_target = f"target <= {target[1]:.0f} MB" if target else "no target"
    verdict = ""
    if target:
        verdict = "  PASS" if wall <= target[0] and rss <= target[1] else "  MISS"
    print(
        f"{name:<10} wall {wall:6.2f} s ({wall_target})   peak RSS {rss:6.1f} MB ({rss_target}){verdict}"
    )
    print(f"{'':<10} CPU (user+sys) median {cpu:.2f} s")
    print(f"{'':<10} runs: " + ", ".join(f"{w:.2f}s/{r:.0f}MB/{c:.2f}s" for w, r, c in results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--compile", action="store_true", help="compile every module from source on every run"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dcode-bench-pyc-") as pycache:
        env = os.environ if args.compile else bytecode_env(Path(pycache))
        if not args.compile:
            run_once(one_liner(), dict(env))  # fills the bytecode cache; not measured
        bytecode = "compiled on every run" if args.compile else "cached, as installed"
        print(
            f"dcode -p benchmark, median of {args.runs} runs, {os.cpu_count()} cores, "
            f"bytecode {bytecode}, load {os.getloadavg()[0]:.2f}"
        )
        print("reference system in the seeds: one-liner 14.5 s / 345 MB; 4-step loop 16.9 s")
        measure("one-liner", one_liner(), args.runs, dict(env))
        measure("tool loop", tool_loop(), args.runs, dict(env))
        print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
