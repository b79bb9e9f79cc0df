"""Helpers for ``scripts/bench/tui.py``: a pty runner for the real ``dcode`` binary, a minimal
terminal emulator to read its frames back, a session builder and a timed scripted server.

Nothing here changes the app: the binary runs as users run it, in a pseudo-terminal, and every
figure comes from what it writes to that terminal (or from ``/proc``).

Run as a script (``python scripts/bench/_tui_support.py build ...``) it builds saved sessions
through the real engine and checkpointer, in its own process so the benchmark's process stays
small and idle while it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROWS, COLS = 40, 120
MODEL = "openai:test-model"


# --------------------------------------------------------------------------------------------
# A minimal terminal: enough of VT100/xterm to replay what Textual writes (cursor moves, SGR,
# text), cell by cell, so the benchmark can tell what is on screen after every read.
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    rb"\x1b\[([0-9;?<>=$]*)([A-Za-z@`~])"  # CSI
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    rb"|\x1b[()][A-Za-z0-9]"
    rb"|\x1b[=>78DEHMNOZc\\]"
    rb"|\r|\n|\x08|[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f]"
)
_INCOMPLETE_ESCAPE = re.compile(rb"\x1b(?:\[[0-9;?<>=$]*|\][^\x07]*)?$")


class Terminal:
    """Cells (character plus the SGR state it was written with) of one screen."""

    def __init__(self, rows: int = ROWS, cols: int = COLS) -> None:
        self.rows, self.cols = rows, cols
        self.chars = [[" "] * cols for _ in range(rows)]
        self.styles = [[""] * cols for _ in range(rows)]
        self.y = self.x = 0
        self.style = ""
        self.alternate = False
        self._carry = b""

    def feed(self, data: bytes) -> None:
        data = self._carry + data
        self._carry = b""
        tail = _INCOMPLETE_ESCAPE.search(data, max(0, len(data) - 256))
        if tail is not None:
            self._carry, data = data[tail.start() :], data[: tail.start()]
        pos = 0
        for match in _TOKEN.finditer(data):
            if match.start() > pos:
                self._text(data[pos : match.start()])
            pos = match.end()
            token = match.group(0)
            if token == b"\r":
                self.x = 0
            elif token == b"\n":
                self.y = min(self.rows - 1, self.y + 1)
            elif token == b"\x08":
                self.x = max(0, self.x - 1)
            elif match.group(2) is not None:
                self._csi(match.group(1), match.group(2))
        if pos < len(data):
            self._text(data[pos:])

    def _csi(self, params: bytes, final: bytes) -> None:
        if final == b"m":
            if params in (b"", b"0"):
                self.style = ""
            else:
                self.style = f"{self.style};{params.decode()}" if self.style else params.decode()
        elif final == b"H" and not params.startswith(b"?"):
            parts = [int(p) if p else 1 for p in params.split(b";")] if params else [1, 1]
            parts += [1] * (2 - len(parts))
            self.y = min(self.rows, max(1, parts[0])) - 1
            self.x = min(self.cols, max(1, parts[1])) - 1
        elif final in (b"h", b"l") and params == b"?1049":
            self.alternate = final == b"h"
        elif final == b"J" and params == b"2":
            for y in range(self.rows):
                self.chars[y] = [" "] * self.cols
                self.styles[y] = [""] * self.cols

    def _text(self, raw: bytes) -> None:
        try:
            text = raw.decode()
        except UnicodeDecodeError as exc:
            # An incomplete UTF-8 sequence at the end of a read waits for the next one.
            text = raw[: exc.start].decode(errors="replace")
            if exc.start >= len(raw) - 3:
                self._carry = raw[exc.start :] + self._carry
        chars, styles, style = self.chars, self.styles, self.style
        for ch in text:
            wide = ord(ch) > 0x1100 and unicodedata.east_asian_width(ch) in "WF"
            if 0 <= self.y < self.rows and 0 <= self.x < self.cols:
                chars[self.y][self.x] = ch
                styles[self.y][self.x] = style
                if wide and self.x + 1 < self.cols:
                    chars[self.y][self.x + 1] = ""
            self.x += 2 if wide else 1

    def row(self, y: int) -> str:
        return "".join(self.chars[y])

    def text(self) -> str:
        return "\n".join(self.row(y).rstrip() for y in range(self.rows))

    def region(self, top: int, bottom: int) -> tuple[str, ...]:
        """Rows ``top..bottom-1`` with their styles, for comparing two moments of the screen."""
        return tuple(self.row(y) + "\0" + "|".join(self.styles[y]) for y in range(top, bottom))

    def find(self, text: str) -> tuple[int, int] | None:
        """(row, column) where ``text`` is on screen, searching from the bottom."""
        for y in range(self.rows - 1, -1, -1):
            x = self.row(y).find(text)
            if x >= 0:
                return y, x
        return None


# --------------------------------------------------------------------------------------------
# The real binary in a pseudo-terminal
# --------------------------------------------------------------------------------------------


def bench_env(home: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "DCODE_", "OPENAI_"))
    }
    env.update(
        DCODE_HOME=str(home),
        OPENAI_API_KEY="bench",
        TERM="xterm-256color",
        COLORTERM="truecolor",
        LANG=env.get("LANG") or "C.UTF-8",
    )
    env.pop("NO_COLOR", None)
    return env


def rss_mb(pid: int) -> float:
    """VmRSS of ``pid`` and all its descendants, in MB."""
    total = 0
    for proc in [pid, *_descendants(pid)]:
        try:
            for line in Path(f"/proc/{proc}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *_descendants(child)]
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# Primary Device Attributes: every terminal answers it at once. dcode asks it (after the graphics
# questions) before the app starts; a pty that stayed silent would make it wait for a timeout no
# real terminal makes it wait for.
DA1_QUERY = b"\x1b[c"
DA1_ANSWER = b"\x1b[?62;22c"


@dataclass
class PtyRun:
    """``dcode`` in a pty of ROWS x COLS; every read is kept with the time it arrived."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    rows: int = ROWS
    cols: int = COLS
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    spawned: float = 0.0
    proc: subprocess.Popen[bytes] | None = None
    screen: Terminal = field(init=False)
    _fed: int = 0
    _master: int = -1

    def __post_init__(self) -> None:
        self.screen = Terminal(self.rows, self.cols)

    def start(self) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))
        self._master = master
        self.spawned = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def pump(self, seconds: float) -> None:
        """Read whatever the app writes for ``seconds``; the bench does nothing else meanwhile."""
        self.pump_until(time.monotonic() + seconds)

    def pump_until(self, deadline: float) -> None:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            readable, _, _ = select.select([self._master], [], [], left)
            if readable:
                self._read()

    def _read(self) -> None:
        try:
            data = os.read(self._master, 1 << 16)
        except OSError:  # the child closed the pty
            data = b""
        now = time.monotonic()
        if not data:
            time.sleep(0.01)
            return
        if DA1_QUERY in data:  # answered as every terminal answers it (an xterm without graphics)
            os.write(self._master, DA1_ANSWER)
        self.chunks.append((now, data))

    def write(self, data: bytes) -> float:
        sent = time.monotonic()
        os.write(self._master, data)
        return sent

    def feed_next(self) -> float | None:
        """Replay the next unread chunk on ``screen``; its arrival time, or None when caught up."""
        if self._fed >= len(self.chunks):
            return None
        at, data = self.chunks[self._fed]
        self._fed += 1
        self.screen.feed(data)
        return at

    def replay(self) -> Iterator[tuple[float, Terminal]]:
        """Every read so far, in order, on a fresh screen: (arrival time, the screen after it)."""
        screen = Terminal(self.rows, self.cols)
        for at, data in self.chunks:
            screen.feed(data)
            yield at, screen

    def wait(self, condition: Callable[[Terminal], bool], timeout: float, what: str) -> float:
        """The arrival time of the read after which the screen first satisfied ``condition``."""
        deadline = time.monotonic() + timeout
        while True:
            while (at := self.feed_next()) is not None:
                if condition(self.screen):
                    return at
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"timed out waiting for {what}; the screen shows:\n{self.screen.text()}"
                )
            if (
                self.proc is not None
                and self.proc.poll() is not None
                and self._fed >= len(self.chunks)
            ):
                raise RuntimeError(
                    f"dcode exited ({self.proc.returncode}) while waiting for {what}:\n{self.screen.text()}"
                )
            self.pump(0.02)

    def quit(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                self.write(b"\x04")  # Ctrl+D quits
                deadline = time.monotonic() + 3
                while self.proc.poll() is None and time.monotonic() < deadline:
                    self.pump(0.05)
        except OSError:
            pass
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            os.close(self._master)


def compile_bytecode() -> None:
    """Byte-compile dcode's own modules, as ``pip install`` does for the packages it installs.

    An editable checkout otherwise compiles them on first use, and never when
    PYTHONDONTWRITEBYTECODE is set: then every launch would parse ~100 modules from source,
    which no installed copy does."""
    import compileall

    compileall.compile_dir(str(ROOT / "dcode"), quiet=1)


def dcode_argv(base_url: str, *extra: str) -> list[str]:
    dcode = Path(sys.executable).with_name("dcode")
    return [str(dcode), "-m", MODEL, "--base-url", base_url, *extra]


IDLE_PLACEHOLDER = "Ask dcode…"
BUSY_PLACEHOLDER = "Working…"
STARTING_PLACEHOLDER = "Starting the agent…"


def has_first_frame(screen: Terminal) -> bool:
    """The first screen: the prompt box with its placeholder (the agent may still be starting)
    and the status bar with the model."""
    text = screen.text()
    placeholders = (IDLE_PLACEHOLDER, BUSY_PLACEHOLDER, STARTING_PLACEHOLDER)
    return screen.alternate and any(p in text for p in placeholders) and MODEL in text


def is_ready(screen: Terminal) -> bool:
    """The engine has loaded: the idle placeholder is back and "Starting…" is gone."""
    text = screen.text()
    return IDLE_PLACEHOLDER in text and "Starting…" not in text


# --------------------------------------------------------------------------------------------
# Sessions and answers
# --------------------------------------------------------------------------------------------

_TOPICS = [
    "retry",
    "cache",
    "parser",
    "scheduler",
    "config",
    "logging",
    "auth",
    "storage",
    "router",
    "metrics",
]


def _source(turn: int, lines: int) -> str:
    body = []
    for n in range(1, lines + 1):
        body.append(
            f"{n:>6}\t    value_{n} = compute_{turn}(items[{n}], limit={n * 3})  # step {n} of {_TOPICS[turn % 10]}"
        )
    return "\n".join(body)


def session_topic(count: int) -> str:
    """The topic of the last turn of a ``session_messages(count)`` session."""
    return _TOPICS[((count - 1) // 4) % len(_TOPICS)]


def session_messages(count: int) -> list[Any]:
    """``count`` messages of a realistic coding session, in turns of four: the prompt, a
    read_file call, its ~60-line result, and a Markdown answer (a code block every other turn)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    messages: list[Any] = []
    turn = 0
    while len(messages) < count:
        topic = _TOPICS[turn % len(_TOPICS)]
        path = f"src/{topic}/module_{turn}.py"
        call_id = f"call_bench_{turn}"
        answer = [
            f"## {topic.title()} in `module_{turn}`",
            "",
            f"The {topic} path in `{path}` does three things before it returns:",
            "",
            f"1. it validates the input against `Schema{turn}` and rejects empty batches;",
            f"2. it calls `compute_{turn}` once per item, with a limit that grows linearly;",
            "3. it records the elapsed time in the metrics registry.",
            "",
            "Nothing here retries on failure, so a transient error surfaces at once. " * 3,
        ]
        if turn % 2 == 0:
            answer += [
                "",
                "```python",
                f"def compute_{turn}(item, limit):",
                "    if item is None:",
                "        raise ValueError('empty')",
                f"    return min(item * {turn % 7 + 2}, limit)",
                "```",
            ]
        answer += [
            "",
            f"**Summary:** `{path}` is safe to change; update the tests in `tests/test_{topic}.py`.",
        ]
        messages.append(
            HumanMessage(
                content=f"Question {turn}: how does {path} handle {topic}? Please read it and explain."
            )
        )
        messages.append(
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "read_file",
                        "args": {"file_path": path},
                        "id": call_id,
                        "type": "tool_call",
                    }
                ],
            )
        )
        messages.append(
            ToolMessage(content=_source(turn, 60), tool_call_id=call_id, name="read_file")
        )
        messages.append(AIMessage(content="\n".join(answer)))
        turn += 1
    return messages[:count]


async def _build_sessions(counts: list[int], base_url: str, batch: int) -> dict[str, str]:
    from dcode.agent.engine import Engine
    from dcode.settings.config import load_settings

    settings = load_settings(cli={"model": MODEL, "base_url": base_url})
    built: dict[str, str] = {}
    engine = await Engine.open(settings)
    try:
        for count in counts:
            runner = engine.runner(None, session_id=None)  # type: ignore[arg-type] - no turn runs
            messages = session_messages(count)
            for start in range(0, len(messages), batch):
                await engine.graph.aupdate_state(
                    runner.config, {"messages": messages[start : start + batch]}, as_node="model"
                )
            stored = await runner.messages()
            if len(stored) != count:
                raise RuntimeError(f"the session holds {len(stored)} messages, not {count}")
            engine.store.record_turn(
                runner.session_id,
                prompt=f"bench session of {count} messages",
                model=engine.resolved.spec,
                message_count=count,
                input_tokens=count * 400,
                output_tokens=count * 60,
                context_tokens=min(count * 25, 24_000),
            )
            built[str(count)] = runner.session_id
    finally:
        await engine.close()
    return built


def build_sessions(counts: list[int], home: Path, workspace: Path, base_url: str) -> dict[int, str]:
    """Build one saved session per count in ``home`` (a separate process); count -> session id."""
    out = subprocess.run(
        [sys.executable, __file__, "build", "--base-url", base_url, *map(str, counts)],
        cwd=workspace,
        env=bench_env(home),
        capture_output=True,
        text=True,
        timeout=240,
    )
    if out.returncode != 0:
        raise RuntimeError(f"building the sessions failed:\n{out.stderr}")
    return {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


SENTINEL = "Bench answer complete: zq7x."


def long_answer(chars: int = 12_000) -> str:
    """A long Markdown answer (headings, lists, code blocks, a table), ending in SENTINEL."""
    parts: list[str] = []
    section = 0
    while sum(map(len, parts)) < chars:
        section += 1
        parts.append(f"## Step {section}: the {_TOPICS[section % 10]} layer\n\n")
        parts.append(
            f"The {_TOPICS[section % 10]} layer keeps its state in a small dataclass and exposes two functions. "
            "Both are pure, so the tests can call them directly without any fixtures, and the caller "
            "decides when to persist the result.\n\n"
        )
        parts.append(
            "- it reads the configuration once, at start-up;\n- it never blocks the event loop;\n"
            f"- errors carry the offending key (`{_TOPICS[section % 10]}.limit`).\n\n"
        )
        parts.append(
            "```python\n"
            f"@dataclass(frozen=True)\nclass State{section}:\n    limit: int = {section * 10}\n    seen: tuple[str, ...] = ()\n\n"
            f"def advance(state: State{section}, key: str) -> State{section}:\n"
            "    if len(state.seen) >= state.limit:\n        raise OverflowError(key)\n"
            "    return replace(state, seen=(*state.seen, key))\n```\n\n"
        )
        if section % 3 == 0:
            parts.append(
                "| field | type | default |\n|---|---|---|\n| limit | int | 10 |\n| seen | tuple | () |\n\n"
            )
    parts.append(SENTINEL)  # no trailing newline: the last chunk carries visible text
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# The scripted server, with a clock on what it writes
# --------------------------------------------------------------------------------------------

_CONTENT = re.compile(rb'"content":"(?!")')


@dataclass
class StreamRecord:
    writes: list[tuple[float, bytes]] = field(default_factory=list)

    def last_content(self) -> float | None:
        """When the last frame carrying answer text left the server."""
        for at, data in reversed(self.writes):
            if _CONTENT.search(data):
                return at
        return None

    def content_chars(self) -> int:
        return sum(
            len(json.loads(d.split(b"data: ", 1)[1])["choices"][0]["delta"]["content"] or "")
            for _, d in self.writes
            if _CONTENT.search(d)
        )


STREAMS: list[StreamRecord] = []
"""One record per streamed response, in order, from every server ``timed_server`` started."""


def timed_server(*steps: Any) -> Any:
    """A started ScriptedModelServer whose streamed writes are timed (time.monotonic, which is
    the same clock as the pty reads): the server's send_stream is wrapped in this process only."""
    from tests.support import model_server

    records = STREAMS
    handler = model_server._Handler
    original = handler.send_stream

    class TimedWriter:
        def __init__(self, inner: Any, record: StreamRecord) -> None:
            self.inner, self.record = inner, record

        def write(self, data: bytes) -> int:
            written = self.inner.write(data)
            self.record.writes.append((time.monotonic(), bytes(data)))
            return written

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    def send_stream(self: Any, *args: Any, **kwargs: Any) -> None:
        record = StreamRecord()
        records.append(record)
        inner = self.wfile
        self.wfile = TimedWriter(inner, record)
        try:
            original(self, *args, **kwargs)
        finally:
            self.wfile = inner

    if not getattr(handler, "_bench_timed", False):
        handler.send_stream = send_stream
        handler._bench_timed = True
    return model_server.ScriptedModelServer(*steps).start()


def _main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build saved sessions of the given message counts")
    build.add_argument("--base-url", required=True)
    build.add_argument("--batch", type=int, default=40)
    build.add_argument("counts", type=int, nargs="+")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_build_sessions(args.counts, args.base_url, args.batch))))


if __name__ == "__main__":
    _main()
