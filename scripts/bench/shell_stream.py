"""Benchmark: a shell command's output shown while it runs (``execute``'s ``tool_output`` events).

Run as ``.venv/bin/python scripts/bench/shell_stream.py`` from the project root. A command
prints 100,000 lines as fast as it can (``seq``), then the same 100,000 lines over about two
seconds; each runs through the local backend twice, with the live tail (``LiveOutput``: every
piece of output into the tail, an event at most every 0.1 s) and without it.

Printed beside the targets: the time the tail adds to the fast command (at most 50 ms: the
command itself takes about as long), and the events the slow one puts out (at most one per
0.1 s of its run plus one, whatever it prints: the screen is asked to redraw a call's lines
ten times a second at most). Each time is the best of three runs.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dcode.agent.backends.local import LocalBackend
from dcode.agent.events import Event
from dcode.agent.tools.factory import CallSite
from dcode.agent.tools.live_output import INTERVAL_S, LiveOutput

FAST = "seq 1 100000"
SLOW = "for i in $(seq 0 19); do seq $((i*5000+1)) $((i*5000+5000)); sleep 0.1; done"
TARGET_EXTRA_MS = 50.0


async def run(backend: LocalBackend, command: str, live: bool) -> tuple[float, int, int]:
    """Seconds, events put out, pieces of output the backend handed over."""
    events: list[Event] = []
    pieces = 0
    output = LiveOutput(CallSite("bench", events.append) if live else CallSite())

    def take(text: str) -> None:
        nonlocal pieces
        pieces += 1
        output.add(text)

    started = time.perf_counter()
    async with output:
        result = await backend.execute(command, on_output=take if live else None)
    elapsed = time.perf_counter() - started
    assert result.output.count("\n") == 100_000, result.output[-200:]
    return elapsed, len(events), pieces


async def best(backend: LocalBackend, command: str, live: bool) -> float:
    return min([(await run(backend, command, live))[0] for _ in range(3)])


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        backend = LocalBackend(Path(folder))
        extra_ms = (await best(backend, FAST, True) - await best(backend, FAST, False)) * 1000
        verdict = "OK" if extra_ms <= TARGET_EXTRA_MS else "OVER"
        print(
            f"100,000 lines at once: the live tail adds {extra_ms:6.1f} ms (target ≤ {TARGET_EXTRA_MS:.0f} ms) {verdict}"
        )
        elapsed, events, pieces = await run(backend, SLOW, True)
        allowed = int(elapsed / INTERVAL_S) + 1
        verdict = "OK" if events <= allowed else "OVER"
        print(
            f"100,000 lines over {elapsed:.1f} s: {events} events for {pieces} pieces of output (target ≤ {allowed}) {verdict}"
        )


if __name__ == "__main__":
    asyncio.run(main())
