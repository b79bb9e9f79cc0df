"""Benchmark: the dcode TUI, the real binary in a 120x40 pseudo-terminal, against the scripted model server.

Every figure comes from the real ``dcode`` process (``.venv/bin/dcode -m openai:test-model
--base-url <scripted server>``, DCODE_HOME in a temp dir): the benchmark reads what the app
writes to the pty, replays it on a small terminal emulator, and reads /proc for memory. The pty
answers the one question every terminal answers at once (Primary Device Attributes, which
dcode asks before it starts, after its graphics questions), as an xterm without pictures does.
dcode's modules are byte-compiled first, as they are in an installed copy.

- first paint: spawn -> the read that completes the first screen (prompt box with its
  placeholder, status bar with the model); median of --runs fresh launches;
  with --mcp-slow N, the user's mcp.json names N MCP servers that never answer (start-up must
  not wait for them);
- idle RSS: VmRSS (process and children) once the engine has loaded ("Starting…" gone, the idle
  placeholder back) plus 2 s of quiet, in the same launches;
- RSS after one answered prompt: in the same launches, a one-line prompt typed and sent, the
  model reading a file with read_file and then answering in one line, that answer on screen,
  the idle placeholder back, then 2 s of quiet;
- keystroke latency: with a resumed 1,000-message session, --keys letters typed into the pty at
  a human pace (50-90 ms apart); each is timed from the write of its byte to the read after
  which the prompt line shows it; p50/p95 over all keys of all --session-runs launches;
- RSS growth: idle RSS resumed on a 200-message vs a 1,000-message session (fresh processes,
  transcript painted at the bottom, 1.5 s of quiet), medians; the same launches also print when
  the transcript's last answer was first on screen, and when the engine had opened the session;
- last token to final paint: a ~12,000-character Markdown answer streamed at 5,000 chars/s
  (50-char chunks, 10 ms apart); from the server's write of the last text chunk (the server runs
  in this process, its writes timed on the same monotonic clock as the pty reads) to the last
  read that changed the transcript's cells (text or style), after which they stayed unchanged
  for a second; median of --runs.

Run: .venv/bin/python scripts/bench/tui.py [--runs N] [--session-runs N] [--keys N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _tui_support as tui
from _tui_support import PtyRun

from dcode.agent.tools.spec import READ_FILE
from tests.support.model_server import reply, tool_call

SMALL, LARGE = 200, 1_000
STREAM_RATE = (50, 0.01)  # chunk_size, chunk_delay: 5,000 chars/s
TYPED = ("the-quick-brown-fox-jumps-over-the-lazy-dog-" * 4)[:100]
PROMPT, ANSWER = "what does notes.md say", "It lists the modules and the tests that cover them."
NOTES = "# Notes\n\n" + "The parser, the scheduler and the cache each have their own tests.\n" * 40


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    target: float | None
    detail: str = ""
    fmt: str = "{:.2f}"

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "PASS" if self.value <= self.target else "MISS"

    def cells(self) -> tuple[str, str, str, str]:
        value = f"{self.fmt.format(self.value)} {self.unit}"
        target = (
            f"<= {self.fmt.format(self.target)} {self.unit}" if self.target is not None else "-"
        )
        return self.name, value, target, self.verdict


@dataclass
class Context:
    work: Path
    base_url: str
    stream_url: str
    answer_url: str
    sessions: dict[int, str] = field(default_factory=dict)
    mcp_slow: int = 0

    def launch(self, home: Path, *extra: str, base_url: str | None = None) -> PtyRun:
        run = PtyRun(
            tui.dcode_argv(base_url or self.base_url, *extra), tui.bench_env(home), self.work / "ws"
        )
        run.start()
        return run


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# -- first paint and idle RSS ---------------------------------------------------------------


def answered(run: PtyRun) -> float:
    """VmRSS once the engine has answered one prompt and the app is idle again."""
    for character in PROMPT:
        run.write(character.encode())
        run.pump(0.02)
    run.write(b"\r")
    run.wait(lambda s: ANSWER in s.text() and tui.is_ready(s), 60, "the answer to the first prompt")
    run.pump(2.0)
    return tui.rss_mb(run.pid)


def startup(ctx: Context, runs: int) -> tuple[list[float], list[float], list[float], list[float]]:
    paints, ready, rss, after = [], [], [], []
    for n in range(runs):
        home = ctx.work / f"home-start-{n}"
        if ctx.mcp_slow:
            import json

            home.mkdir(parents=True, exist_ok=True)
            hang = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
            servers = {f"slow{i}": hang for i in range(ctx.mcp_slow)}
            (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
        run = ctx.launch(home, base_url=ctx.answer_url)
        try:
            painted = run.wait(tui.has_first_frame, 15, "the first frame")
            loaded = run.wait(tui.is_ready, 30, "the engine")
            run.pump(2.0)
            paints.append(painted - run.spawned)
            ready.append(loaded - run.spawned)
            rss.append(tui.rss_mb(run.pid))
            after.append(answered(run))
        finally:
            run.quit()
    return paints, ready, rss, after


# -- a resumed session: RSS, then typing ----------------------------------------------------


def resumed(
    ctx: Context, count: int, keys: int, rng: random.Random
) -> tuple[float, list[float], float, float]:
    """RSS once the resumed session is open, per-key latencies, and the seconds from launch
    until the transcript's last answer was on screen, and until the engine had opened the
    session (ready, the "Resumed session" notice shown)."""
    run = ctx.launch(ctx.work / "home-sessions", "-r", ctx.sessions[count])
    last_answer = f"src/{tui.session_topic(count)}/module_{(count - 1) // 4}.py is safe to change"  # code spans show bare
    try:
        transcript_at = run.wait(
            lambda s: last_answer in s.text(), 60, f"the {count}-message transcript"
        )
        opened = run.wait(
            lambda s: tui.is_ready(s) and "Resumed session" in s.text(),
            60,
            f"the {count}-message session",
        )
        run.pump(1.5)
        rss = tui.rss_mb(run.pid)
        while run.feed_next() is not None:
            pass
        where = run.screen.find(tui.IDLE_PLACEHOLDER)
        assert where is not None, run.screen.text()
        row, column = where  # the draft starts where the placeholder did
        text = TYPED[:keys]
        sent: list[float] = []
        for character in text:
            sent.append(run.write(character.encode()))
            run.pump(rng.uniform(0.05, 0.09))
        run.pump(1.0)
        latencies: list[float] = []
        index = 0
        while index < len(text) and (at := run.feed_next()) is not None:
            shown = run.screen.row(row)[column:]
            while index < len(text) and at >= sent[index] and shown.startswith(text[: index + 1]):
                latencies.append(at - sent[index])
                index += 1
        if index < len(text):
            raise RuntimeError(
                f"only {index} of {len(text)} keys reached the screen:\n{run.screen.text()}"
            )
        return rss, latencies, transcript_at - run.spawned, opened - run.spawned
    finally:
        run.quit()


# -- streaming ------------------------------------------------------------------------------


@dataclass
class StreamResult:
    lag: float  # last text chunk written -> transcript's last change on screen
    sentinel: float  # last text chunk written -> the answer's last words first on screen
    settled: float  # -> the last change outside the prompt box (transcript or status bar)
    chars: int
    seconds: float  # first to last text chunk, at the server
    cpu: float  # the app's CPU seconds per second while the answer streamed


def transcript_changes(
    run: PtyRun, since: float, top: int, below: int
) -> tuple[float, float, float | None]:
    """Replaying every read: when the transcript (rows above ``top``) last changed, when the rows
    from ``below`` down (the status bar) last changed, and when SENTINEL first showed."""
    changed_at = settled_at = 0.0
    seen_at: float | None = None
    region = rest = None
    for at, screen in run.replay():
        now, others = screen.region(0, top), screen.region(below, screen.rows)
        if at >= since:
            if now != region:
                changed_at = at
            if others != rest:
                settled_at = at
            if seen_at is None and tui.SENTINEL in screen.text():
                seen_at = at
        region, rest = now, others
    return changed_at, settled_at, seen_at


def streamed(ctx: Context, n: int) -> StreamResult:
    run = ctx.launch(ctx.work / "home-stream", base_url=ctx.stream_url)
    try:
        run.wait(tui.is_ready, 30, "the engine")
        run.pump(0.5)
        before = len(tui.STREAMS)
        for character in f"stream answer {n}":
            run.write(character.encode())
            run.pump(0.02)
        run.pump(0.1)
        while run.feed_next() is not None:
            pass
        where = run.screen.find("stream answer")
        assert where is not None, run.screen.text()
        top = where[0] - 1  # the transcript: every row above the prompt box's top border
        cpu_before = tui.cpu_seconds(run.pid)
        entered = run.write(b"\r")
        deadline = time.monotonic() + 60
        while len(tui.STREAMS) <= before or not any(
            b"[DONE]" in data for _, data in tui.STREAMS[before].writes
        ):
            if time.monotonic() > deadline:
                raise TimeoutError("the scripted server never finished the answer")
            run.pump(0.05)
        busy = (tui.cpu_seconds(run.pid) - cpu_before) / (time.monotonic() - entered)
        record = tui.STREAMS[before]
        last = record.last_content()
        assert last is not None
        # Read only (no replay) while the app paints the end: a reader busy emulating the terminal
        # would stop draining the pty, and the app's last frame would wait on the bench.
        run.pump(1.5)
        # Settle: the turn has ended (idle placeholder back) and the transcript has not changed for 1 s.
        run.wait(lambda s: tui.is_ready(s) and tui.SENTINEL in s.text(), 30, "the end of the turn")
        for _ in range(5):
            run.pump(1.0)
            changed_at, settled_at, seen_at = transcript_changes(run, entered, top, where[0] + 2)
            if time.monotonic() - changed_at >= 1.0:
                break
        assert seen_at is not None, "the end of the answer never reached the screen"
        first = next(at for at, data in record.writes if tui._CONTENT.search(data))
        return StreamResult(
            changed_at - last,
            seen_at - last,
            max(changed_at, settled_at) - last,
            record.content_chars(),
            last - first,
            busy,
        )
    finally:
        run.quit()


# -- the table ------------------------------------------------------------------------------


def print_table(figures: list[Figure]) -> None:
    rows = [("figure", "measured", "target", ""), *[f.cells() for f in figures]]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    line = "  ".join("-" * w for w in widths)
    print()
    for number, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if number == 0:
            print(line)
    print()
    for figure in figures:
        if figure.detail:
            print(f"{figure.name}: {figure.detail}")


PARTS = ("startup", "sessions", "stream")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=5,
        help="launches for first paint / idle RSS and streamed answers",
    )
    parser.add_argument(
        "--session-runs", type=int, default=3, help="launches on each resumed session"
    )
    parser.add_argument(
        "--keys", type=int, default=100, help="keys typed per resumed launch (at most 100)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--mcp-slow",
        type=int,
        default=0,
        help="MCP servers that never answer, in the user's mcp.json (start-up)",
    )
    parser.add_argument(
        "--only", choices=PARTS, action="append", help="measure only this part (repeatable)"
    )
    args = parser.parse_args()
    parts = set(args.only or PARTS)
    rng = random.Random(args.seed)
    started = time.monotonic()
    print(
        f"dcode TUI benchmark: the real binary in a {tui.COLS}x{tui.ROWS} pty, {os.cpu_count()} cores"
    )
    print("reference system in the seeds: first paint 1.55 s, idle RSS ~450 MB")

    tui.compile_bytecode()
    answer = tui.long_answer()
    server = tui.timed_server(reply("ok", repeat=True))
    stream_server = tui.timed_server(
        reply(answer, chunk_size=STREAM_RATE[0], chunk_delay=STREAM_RATE[1], repeat=True)
    )
    asked = [
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.md"})]),
        reply(ANSWER),
    ]
    answer_server = tui.timed_server(*asked * args.runs)
    with tempfile.TemporaryDirectory(prefix="dcode-bench-tui-") as tmp:
        ctx = Context(
            Path(tmp),
            server.base_url,
            stream_server.base_url,
            answer_server.base_url,
            mcp_slow=args.mcp_slow,
        )
        (ctx.work / "ws").mkdir()
        (ctx.work / "ws" / "notes.md").write_text(NOTES)
        try:
            paints: list[float] = []
            ready: list[float] = []
            idle: list[float] = []
            after: list[float] = []
            sizes: dict[int, list[float]] = {SMALL: [], LARGE: []}
            keys: dict[int, list[float]] = {SMALL: [], LARGE: []}
            paint_times: dict[int, list[float]] = {SMALL: [], LARGE: []}
            open_times: dict[int, list[float]] = {SMALL: [], LARGE: []}
            streams: list[StreamResult] = []
            if "sessions" in parts:
                built = time.monotonic()
                ctx.sessions = tui.build_sessions(
                    [SMALL, LARGE], ctx.work / "home-sessions", ctx.work / "ws", server.base_url
                )
                print(
                    f"built sessions of {SMALL} and {LARGE} messages (turns of prompt, read_file call, 60-line result, "
                    f"Markdown answer) through the engine in {time.monotonic() - built:.1f} s"
                )
            if "startup" in parts:
                print(
                    f"launching {args.runs}x for first paint, idle RSS and RSS after one answered prompt…",
                    flush=True,
                )
                paints, ready, idle, after = startup(ctx, args.runs)
            if "sessions" in parts:
                print(
                    f"resuming each session {args.session_runs}x and typing {min(args.keys, len(TYPED))} keys…",
                    flush=True,
                )
                for _ in range(args.session_runs):
                    for count in (SMALL, LARGE):
                        rss, latencies, painted, opened = resumed(ctx, count, args.keys, rng)
                        sizes[count].append(rss)
                        keys[count].extend(latencies)
                        paint_times[count].append(painted)
                        open_times[count].append(opened)
            if "stream" in parts:
                print(
                    f"streaming a {len(answer):,}-character Markdown answer {args.runs}x at 5,000 chars/s…",
                    flush=True,
                )
                streams = [streamed(ctx, n) for n in range(args.runs)]
        finally:
            server.stop()
            stream_server.stop()
            answer_server.stop()

    figures: list[Figure] = []
    if paints:
        figures += [
            Figure(
                "first paint",
                statistics.median(paints),
                "s",
                0.5,
                "runs "
                + ", ".join(f"{v:.2f}" for v in paints)
                + f" s; engine ready at median {statistics.median(ready):.2f} s",
            ),
            Figure(
                "idle RSS",
                statistics.median(idle),
                "MB",
                150,
                "runs " + ", ".join(f"{v:.0f}" for v in idle) + " MB",
                fmt="{:.0f}",
            ),
            Figure(
                "RSS after one answered prompt",
                statistics.median(after),
                "MB",
                150,
                "runs " + ", ".join(f"{v:.0f}" for v in after) + " MB",
                fmt="{:.0f}",
            ),
        ]
    if keys[LARGE]:
        small_rss, large_rss = statistics.median(sizes[SMALL]), statistics.median(sizes[LARGE])
        growth = (large_rss - small_rss) / small_rss * 100
        large_ms = [v * 1000 for v in keys[LARGE]]
        small_ms = [v * 1000 for v in keys[SMALL]]
        figures += [
            Figure(
                f"keystroke p95, {LARGE:,} messages",
                percentile(large_ms, 95),
                "ms",
                33,
                f"p50 {percentile(large_ms, 50):.1f} ms, max {max(large_ms):.1f} ms over {len(large_ms)} keys; "
                f"with {SMALL} messages p50 {percentile(small_ms, 50):.1f} / p95 {percentile(small_ms, 95):.1f} ms",
                fmt="{:.1f}",
            ),
            Figure(
                f"RSS growth {SMALL} -> {LARGE:,} messages",
                growth,
                "%",
                20,
                f"{small_rss:.0f} MB -> {large_rss:.0f} MB (medians; runs {', '.join(f'{v:.0f}' for v in sizes[SMALL])} / "
                f"{', '.join(f'{v:.0f}' for v in sizes[LARGE])} MB)",
                fmt="{:.1f}",
            ),
        ]
    if streams:
        lags = [s.lag * 1000 for s in streams]
        seconds = statistics.median(s.seconds for s in streams)
        figures.append(
            Figure(
                "last token -> final paint",
                statistics.median(lags),
                "ms",
                100,
                "runs "
                + ", ".join(f"{v:.0f}" for v in lags)
                + " ms; last words first on screen after "
                + ", ".join(f"{s.sentinel * 1000:.0f}" for s in streams)
                + " ms; status bar settled after "
                + ", ".join(f"{s.settled * 1000:.0f}" for s in streams)
                + " ms; "
                + f"{streams[0].chars:,} chars in {seconds:.2f} s at the server "
                + f"({streams[0].chars / seconds:,.0f} chars/s); the app used "
                + f"{statistics.median(s.cpu for s in streams):.0%} of a core meanwhile",
                fmt="{:.0f}",
            )
        )
    print_table(figures)
    if paint_times[LARGE]:
        print(
            f"resumed transcript on screen after (launch, median): {SMALL} messages "
            f"{statistics.median(paint_times[SMALL]):.2f} s, {LARGE:,} messages {statistics.median(paint_times[LARGE]):.2f} s; "
            f"session open (engine ready) after {statistics.median(open_times[SMALL]):.2f} s / "
            f"{statistics.median(open_times[LARGE]):.2f} s"
        )
    print(f"\ntotal {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
