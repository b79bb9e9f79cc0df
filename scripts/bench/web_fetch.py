"""Benchmark: what web_fetch's checks cost on a local page.

Each fetch looks its host up once, checks every address, connects to a checked one and follows
redirects hop by hop, each on a client of its own; the trust store for https is loaded once
per process, not per request. Cases, each the median of many fetches of a 1 KiB page from the
scripted server on loopback (named in the rules as a user's ``[fetch] allow_private`` would):
- by address: ``http://127.0.0.1:PORT/page`` (no lookup);
- by name: ``http://localhost:PORT/page`` (one lookup, the connection pinned to its answer);
- one redirect: ``/hop`` answers 302 to ``/page`` (two requests, two clients).

Target: <= 50 ms a fetch on a quiet machine (a lookup and a loopback round trip are well under
a millisecond; the rest is the HTTP client).

Run: .venv/bin/python scripts/bench/web_fetch.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dcode.agent.tools.web_client import FetchRules, fetch  # noqa: E402
from tests.support.model_server import ScriptedModelServer  # noqa: E402

TARGET_MS = 50.0


async def median_ms(url: str, rules: FetchRules, runs: int) -> float:
    await fetch(url, rules=rules)  # the first loads httpx
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        page = await fetch(url, rules=rules)
        times.append((time.perf_counter() - start) * 1000)
        assert page.status == 200, page.status
    return statistics.median(times)


async def run(runs: int) -> None:
    with ScriptedModelServer() as server:
        server.pages["/page"] = (200, "text/plain", b"x" * 1024)
        server.redirects["/hop"] = "/page"
        rules = FetchRules(
            private_hosts=(f"127.0.0.1:{server.port}", f"localhost:{server.port}"),
            unasked=lambda _: True,
        )
        cases = {
            "by address": f"http://127.0.0.1:{server.port}/page",
            "by name": f"http://localhost:{server.port}/page",
            "one redirect": f"http://127.0.0.1:{server.port}/hop",
        }
        print(f"web_fetch on loopback, median of {runs} fetches, {os.cpu_count()} cores")
        for name, url in cases.items():
            ms = await median_ms(url, rules, runs)
            verdict = "ok" if ms <= TARGET_MS else "OVER"
            print(f"{name:<13} {ms:7.1f} ms   (target <= {TARGET_MS:.0f} ms) {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    asyncio.run(run(parser.parse_args().runs))


if __name__ == "__main__":
    main()
