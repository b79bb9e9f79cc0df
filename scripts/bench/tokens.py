"""Benchmark: counting a long history after one new message.

Run as ``.venv/bin/python scripts/bench/tokens.py`` from the project root. Builds a session
history of about 200,000 o200k tokens (user prompts, assistant answers with tool calls,
tool results of code, JSON, logs and Chinese text), counts it once (cold: every message goes
through the encoder), then appends one message and counts again, as a compaction trigger
does before each model call. Prints the median of several warm counts beside the target
(≤ 50 ms), the cold figure, the encoding's load time, and the encoder calls per warm count.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.context.tokens.counter import TokenCounter
from dcode.context.tokens.encodings import encoding

TARGET_MS = 50.0
HISTORY_TOKENS = 200_000

ROOT = Path(__file__).resolve().parents[2]
CODE = (ROOT / "dcode" / "context" / "tokens" / "counter.py").read_text(encoding="utf-8")
JSON_TEXT = json.dumps(
    {
        "items": [
            {"id": i, "name": f"item-{i}", "tags": ["a", "b"], "ok": i % 2 == 0} for i in range(40)
        ]
    },
    indent=2,
)
CJK = "上下文窗口的大小决定了模型一次能读取多少内容。" * 20
LOG = "\n".join(
    f"src/module_{i}.py:{i * 7}: def handler_{i}(request): return None" for i in range(60)
)
RESULTS = (CODE[:6000], JSON_TEXT, CJK, LOG)


class CountingEncoder:
    def __init__(self) -> None:
        self.inner = encoding()
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return self.inner.encode_ordinary(text)


def history(counter: TokenCounter) -> list:
    messages: list = []
    step = 0
    while counter.count_messages(messages) < HISTORY_TOKENS:
        messages.append(
            HumanMessage(
                f"step {step}: look at the handler and fix the failing test", id=f"h{step}"
            )
        )
        call = {
            "name": "read_file",
            "args": {"file_path": f"src/module_{step}.py"},
            "id": f"c{step}",
            "type": "tool_call",
        }
        messages.append(AIMessage("Reading the file.", tool_calls=[call], id=f"a{step}"))
        messages.append(
            ToolMessage(RESULTS[step % len(RESULTS)], tool_call_id=f"c{step}", id=f"t{step}")
        )
        step += 1
    return messages


def main() -> None:
    started = time.perf_counter()
    encoding()
    load_ms = (time.perf_counter() - started) * 1000
    messages = history(TokenCounter("gpt-4o"))  # sized with a throwaway counter
    encoder = CountingEncoder()
    counter = TokenCounter("gpt-4o", encoder=encoder)
    started = time.perf_counter()
    total = counter.count_messages(messages)
    cold_ms = (time.perf_counter() - started) * 1000
    warm, calls = [], []
    for n in range(9):
        messages.append(HumanMessage(f"one more thing, number {n}", id=f"new{n}"))
        before = encoder.calls
        started = time.perf_counter()
        counter.count_messages(messages)
        warm.append((time.perf_counter() - started) * 1000)
        calls.append(encoder.calls - before)
    median = statistics.median(warm)
    print(f"history: {len(messages)} messages, {total:,} tokens (o200k, with message overhead)")
    print(f"encoding load: {load_ms:.0f} ms (once per process)")
    print(f"cold count (every message encoded): {cold_ms:.1f} ms")
    print(
        f"after one new message: {median:.2f} ms median (target ≤ {TARGET_MS:.0f} ms) "
        f"{'OK' if median <= TARGET_MS else 'OVER'}; encoder calls per count: {max(calls)}"
    )


if __name__ == "__main__":
    main()
