"""Benchmark: making a streamed answer safe to draw (``dcode.terminal_text``).

Run as ``.venv/bin/python scripts/bench/terminal_text.py`` from the project root. A 1 MB answer
goes through ``safe_prefix`` in 9- and 40-character deltas, as the TUI feeds each streamed
delta, and through ``safe_text`` whole, as a finished answer, a tool's output or a file is
drawn. Two texts: ordinary Markdown (nothing to change: the common case), and the tests'
hostile text repeated (an escape sequence or control every few characters).

Printed beside the targets: what each delta costs on top of the same loop without it (ordinary
text at most 10 µs: a frame is 16 ms and the engine already spends tens of µs a delta; the
hostile text, some ten sequences a delta, at most 200 µs), and the whole megabyte (at most
150 ms for ordinary text, 1.5 s for the hostile one). Each figure is the best of three runs.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dcode.terminal_text import safe_prefix, safe_text
from tests.support.hostile_text import HOSTILE

SIZE = 1_000_000
TARGET_DELTA_US = {"ordinary": 10.0, "hostile": 200.0}
TARGET_WHOLE_MS = {"ordinary": 150.0, "hostile": 1500.0}
TEXTS = {
    "ordinary": (
        "Some **Markdown**, `code`, a [link](https://example.com) and ünïcödé words.\n"
        * (SIZE // 70)
    )[:SIZE],
    "hostile": (("plain words " * 3 + HOSTILE) * (SIZE // 200))[:SIZE],
}


def best(run: Callable[[], object], times: int = 3) -> float:
    figures = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        figures.append(time.perf_counter() - started)
    return min(figures)


def streamed(pieces: list[str]) -> str:
    held, shown = "", []
    for piece in pieces:
        out, held = safe_prefix(held + piece)
        shown.append(out)
    return "".join(shown) + safe_text(held)


def bare(pieces: list[str]) -> str:
    held, shown = "", []
    for piece in pieces:
        out, held = held + piece, ""
        shown.append(out)
    return "".join(shown) + held


def main() -> None:
    for name, text in TEXTS.items():
        for size in (9, 40):
            pieces = [text[start : start + size] for start in range(0, len(text), size)]
            assert streamed(pieces) == safe_text(text)
            extra_us = (
                (best(partial(streamed, pieces)) - best(partial(bare, pieces))) / len(pieces) * 1e6
            )
            target = TARGET_DELTA_US[name]
            verdict = "OK" if extra_us <= target else "OVER"
            print(
                f"{name:<8} {size:>2}-char deltas: {extra_us:6.2f} µs a delta (target ≤ {target:.0f} µs) {verdict}"
            )
        whole_ms = best(partial(safe_text, text)) * 1000
        target = TARGET_WHOLE_MS[name]
        print(
            f"{name:<8} 1 MB whole:       {whole_ms:7.1f} ms (target ≤ {target:.0f} ms) {'OK' if whole_ms <= target else 'OVER'}"
        )


if __name__ == "__main__":
    main()
