"""Benchmark: peak RSS of read_file on 2,000 lines of a 27 MB, 4-million-line file.

Each case runs in a fresh process that loads the tool set (LangChain and all), calls read_file
once through the real tool and reports its ``ru_maxrss``:
- one-liner: a file of one line (the baseline: what the process costs anyway);
- big file: the first 2,000 lines of the generated file (target: <= 1.2x the one-liner);
- big file, offset 3,000,000: a window deep in the file (same target);
- whole-file load, for contrast: the file read and split in memory, as read_file did before
  it streamed.

The file is made once and cached in the system temp directory.

Run: .venv/bin/python scripts/bench/read_file.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINES = 4_000_000
TARGET_RATIO = 1.2

CHILD = """
import asyncio, json, resource, sys, time
from pathlib import Path
from dcode.agent.backends import LocalBackend
from dcode.agent.tools import build_tools
from dcode.agent.tools.spec import READ_FILE

path, mode, offset = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
tool = next(t for t in build_tools(LocalBackend(path.parent)) if t.name == READ_FILE.name)

async def main():
    if mode == "load":
        lines = path.read_bytes().decode("utf-8").split("\\n")
        return len(lines)
    message = await tool.ainvoke({"type": "tool_call", "id": "b", "name": READ_FILE.name,
                                  "args": {"file_path": path.name, "offset": offset, "limit": 2000}})
    assert message.status == "success", message.content
    return len(message.content)

start = time.perf_counter()
out = asyncio.run(main())
seconds = time.perf_counter() - start
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "s": seconds}))
"""


def big_file() -> Path:
    path = Path(tempfile.gettempdir()) / "dcode-bench-read-file" / "big.log"
    if path.is_file() and path.stat().st_size == 7 * LINES:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for start in range(0, LINES, 100_000):
            out.write(b"".join(b"%06d\n" % (n % 1_000_000) for n in range(start, start + 100_000)))
    return path


def peak(path: Path, mode: str = "tool", offset: int = 0) -> tuple[float, float]:
    """(peak RSS in MB, seconds of the read) of one fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), mode, str(offset)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    return float(figures["rss_mb"]), float(figures["s"])


def main() -> int:
    big = big_file()
    small = big.parent / "one.txt"
    small.write_text("just one line\n")
    base, base_s = peak(small)
    cases = [
        ("big file, first 2,000 lines", peak(big)),
        ("big file, offset 3,000,000", peak(big, offset=3_000_000)),
    ]
    print(f"file: {big} ({big.stat().st_size / 1e6:.1f} MB, {LINES:,} lines)")
    print(f"{'one-liner':32} {base:7.1f} MB  ({base_s:.2f} s)")
    ok = True
    for name, (rss, seconds) in cases:
        ratio = rss / base
        ok = ok and ratio <= TARGET_RATIO
        verdict = "ok" if ratio <= TARGET_RATIO else "OVER"
        print(
            f"{name:32} {rss:7.1f} MB  {ratio:.2f}x the one-liner (target <= {TARGET_RATIO}x)  {verdict}  ({seconds:.2f} s)"
        )
    load, load_s = peak(big, "load")
    print(f"{'whole-file load (contrast)':32} {load:7.1f} MB  {load / base:.2f}x  ({load_s:.2f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
