"""The encoding is loaded only when a figure needs it: bounds from UTF-8 lengths, and the
calibration's observations counted later, exactly as they would have been at once."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import dcode.context.tokens.counter as counter_module
from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import ErrorEvent
from dcode.agent.tools.spec import READ_FILE
from dcode.context.tokens.calibration import HIGH
from dcode.context.tokens.counter import REPORTED_MARGIN, TokenCounter
from dcode.context.tokens.encodings import O200K, encoding
from tests.support.llama_cpp_wire import LlamaCppPython
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tokens import CJK, CODE, JSON_TEXT, PROSE

ROOT = Path(__file__).resolve().parents[1]

MESSAGES = [
    SystemMessage("You are terse."),
    HumanMessage(PROSE, id="h1"),
    AIMessage(
        "",
        id="a1",
        tool_calls=[
            {"id": "c1", "name": "read_file", "args": {"file_path": "src/é.py", "limit": 40}}
        ],
    ),
    ToolMessage(CODE, tool_call_id="c1", id="t1"),
    HumanMessage(
        [{"type": "text", "text": CJK}, {"type": "text", "text": JSON_TEXT}],
        id="h2",
        name="someone",
    ),
    AIMessage("🙂 " * 50 + "\x00\x01 odd bytes", id="a2"),
]


class Asked(list[str]):
    """The encodings asked for, in order; ``threads``: the thread each was loaded on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []


@pytest.fixture
def not_loaded(monkeypatch: pytest.MonkeyPatch) -> Asked:
    """The encoding as if this process had not loaded it yet; records when it is asked for."""
    asked = Asked()

    def load(name: str = O200K):
        asked.append(name)
        asked.threads.append(threading.current_thread())
        monkeypatch.setattr(counter_module, "is_loaded", lambda name: True)
        return encoding(name)

    monkeypatch.setattr(counter_module, "is_loaded", lambda name: False)
    monkeypatch.setattr(counter_module, "encoding", load)
    return asked


def test_a_messages_bound_is_never_below_its_count() -> None:
    counter = TokenCounter("gpt-4o", encoder=encoding(O200K))
    for message in MESSAGES:
        assert counter.bound_message(message) >= counter.count_message(message), message


def test_surely_under_decides_from_lengths_without_the_encoding(not_loaded: list[str]) -> None:
    exact, scaled = TokenCounter("gpt-4o"), TokenCounter("deepseek-chat")
    bound = sum(exact.bound_message(m) for m in MESSAGES)
    assert exact.surely_under(bound + 1, MESSAGES) and not exact.surely_under(bound, MESSAGES)
    # A model counted with another model's encoding may be calibrated up to HIGH: the bound is too.
    assert not scaled.surely_under(bound + 1, MESSAGES) and scaled.surely_under(
        int(bound * HIGH) + 2, MESSAGES
    )
    assert not_loaded == []
    exact.count_message(MESSAGES[1])  # once loaded, counting is cheap: no more guessing
    assert not_loaded == [O200K] and not exact.surely_under(10**9, MESSAGES)


def answered(total: int, id: str = "a1") -> AIMessage:
    return AIMessage(
        "Noted.",
        id=id,
        usage_metadata={"input_tokens": total - 2, "output_tokens": 2, "total_tokens": total},
    )


def test_the_providers_figure_bounds_the_history_it_answered(not_loaded: Asked) -> None:
    counter = TokenCounter("deepseek-chat")  # scaled by HIGH: lengths alone are the loosest
    counter.bound_request(system=SystemMessage("You are terse."))
    answer = answered(3_002)
    messages = [HumanMessage(PROSE * 200, id="h1"), answer, HumanMessage("and now?", id="h2")]
    after = math.ceil(counter.bound_message(messages[2]) * HIGH)
    limit = math.ceil(3_002 * REPORTED_MARGIN) + after + 1
    assert not counter.surely_under(limit, messages)  # ~20 kB of prose: lengths alone cannot tell
    counter.anchor(answer, counter.fixed_bound)
    assert counter.surely_under(limit, messages) and not counter.surely_under(limit - 1, messages)
    other = [HumanMessage(PROSE * 200, id="h1"), answered(3_002, id="resumed"), messages[2]]
    assert not counter.surely_under(limit, other)  # an answer it never saw reported: lengths only
    counter.bound_request(
        system=SystemMessage("You are terse."),
        tools=[{"type": "function", "function": {"name": "t", "description": PROSE}}],
    )
    assert not counter.surely_under(limit, messages)  # the tools that joined since are added
    assert not_loaded == []


async def test_a_tool_using_turn_in_a_small_window_leaves_the_encoding_unloaded(
    server: ScriptedModelServer, make_settings, workspace: Path, not_loaded: Asked
) -> None:
    """The system prompt and tool schemas alone are over a 32k window's trigger by their
    lengths; the provider's figure for the first request bounds the ones after it."""
    (workspace / "notes.md").write_text(PROSE * 20)
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.md"})]),
        reply("Read."),
        reply("Done."),
    )
    async with await Engine.open(make_settings()) as engine:
        assert engine.resolved.profile.max_input_tokens <= 32_768
        runner = engine.runner(HeadlessApprover())
        events = []
        for prompt in ("read notes.md", "thanks"):
            events += [e async for e in runner.run_turn(prompt)]
    assert not [e for e in events if isinstance(e, ErrorEvent)] and len(server.requests) == 3
    assert not_loaded == []


async def test_dcodes_own_estimate_of_a_missing_usage_bounds_nothing(
    server: ScriptedModelServer, make_settings, workspace: Path, not_loaded: Asked
) -> None:
    """A server that reports no usage gets an estimate of four characters a token, which is no
    bound: the encoding is loaded to count, in a worker thread."""
    server.imitate = LlamaCppPython(n_ctx=1_000_000)  # its streams carry no usage
    (workspace / "notes.md").write_text(PROSE * 20)
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.md"})]), reply("Read.")
    )
    async with await Engine.open(
        make_settings(model_overrides={"openai:test-model": {"max_input_tokens": 32_768}})
    ) as engine:
        runner = engine.runner(HeadlessApprover())
        events = [e async for e in runner.run_turn("read notes.md")]
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert not_loaded == [O200K] and not_loaded.threads[0] is not threading.main_thread()


def test_observations_counted_later_calibrate_as_at_once(not_loaded: list[str]) -> None:
    requests = [(MESSAGES[:2], 120), (MESSAGES[:4], 330), (MESSAGES, 910)]
    eager = TokenCounter("deepseek-chat", encoder=encoding(O200K))
    for messages, reported in requests:
        eager.observe(reported, eager.count_request(messages, system=MESSAGES[0]))
    lazy = TokenCounter("deepseek-chat")
    for messages, reported in requests:
        lazy.observe_later(reported, messages, system=MESSAGES[0])
    assert not_loaded == []
    assert lazy.calibration() == eager.calibration() and lazy.fixed == eager.fixed
    assert not_loaded == [O200K]


def test_a_one_line_task_never_loads_the_encoding(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    """In a process of its own: this one has loaded the encoding long ago."""
    server.script(reply("hello there", usage=(4_000, 3)))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    program = f"""
import asyncio, json
from pathlib import Path
from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.settings.config import Settings, WireApi
from dcode.context.tokens.encodings import O200K, is_loaded

async def main():
    settings = Settings(home=Path({str(tmp_path / "home")!r}), workspace=Path({str(workspace)!r}), model="openai:test-model", base_url={server.base_url!r}, api=WireApi.CHAT)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        events = [e async for e in runner.run_turn("say hello")]
        loaded_after_turn = is_loaded(O200K)
        report = await engine.context_report(runner.session_id)  # /context counts: now it loads
        print(json.dumps([events[-1].result, loaded_after_turn, is_loaded(O200K), report.used > 0]))

asyncio.run(main())
"""
    env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "k", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["hello there", False, True, True]
