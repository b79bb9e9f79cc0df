"""Compaction from real token counts: a Chinese-heavy session in a small window is compacted
before a request would overflow it (about four characters a token would see a third of it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages.utils import count_tokens_approximately

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import CompactionFinished, ErrorEvent
from tests.support.model_server import ScriptedModelServer, reply
from tests.support.openai_usage import openai_input_tokens
from tests.test_tokens_lazy import not_loaded  # noqa: F401 - a fixture

WINDOW = 12_000
SENTENCE = "上下文窗口的大小决定了模型一次能读取多少内容，压缩应当在请求溢出之前发生。"  # noqa: RUF001 - Chinese punctuation


def prompt(turn: int) -> str:
    return "".join(f"第{turn}轮第{n}句：{SENTENCE}" for n in range(40))  # noqa: RUF001 - Chinese punctuation


@pytest.fixture(params=["warm", "lazy"])
def encoding_state(request: pytest.FixtureRequest) -> Iterator[str]:
    """Whether the encoding is loaded at start (the TUI) or at the first count that needs it
    (headless, as a fresh process would be: then it must be loaded by the time the window fills)."""
    if request.param == "lazy":
        asked = request.getfixturevalue("not_loaded")
        yield request.param
        assert asked, "the window filled, yet the encoding was never loaded to count it"
        assert threading.main_thread() not in asked.threads, (
            "the encoding was built on the event loop"
        )
        return
    yield request.param


async def test_a_cjk_session_is_compacted_before_the_request_overflows(
    server: ScriptedModelServer, make_settings, workspace: Path, encoding_state: str
) -> None:
    server.window = WINDOW  # a request over the window gets the context-overflow error
    server.script(*(reply("好的，我记下了。") for _ in range(20)))  # noqa: RUF001 - Chinese punctuation
    settings = make_settings(
        model="openai:gpt-4o", model_overrides={"openai:gpt-4o": {"max_input_tokens": WINDOW}}
    )
    events = []
    async with await Engine.open(settings) as engine:
        if encoding_state == "warm":
            engine.tokens.warm()
        runner = engine.runner(HeadlessApprover())
        for turn in range(8):
            async for event in runner.run_turn(prompt(turn)):
                events.append(event)
        messages = await runner.messages()
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert [e for e in events if isinstance(e, CompactionFinished)], (
        "the window filled: a compaction was due"
    )
    sizes = [openai_input_tokens(request.body) for request in server.requests]
    assert max(sizes) <= WINDOW
    # By about four characters a token the whole history would still look far below the
    # trigger: that estimate would not have compacted, and the requests would have overflowed.
    assert count_tokens_approximately(messages) < 0.85 * WINDOW / 2


async def test_a_chinese_paste_that_would_overflow_is_compacted_for_at_once(
    server: ScriptedModelServer, make_settings, workspace: Path, encoding_state: str
) -> None:
    # English turns first: the provider's figures so far are those of English text, so only
    # a real count of the paste sees that it would not fit.
    server.window = WINDOW
    server.script(*(reply("Noted.") for _ in range(10)))
    settings = make_settings(
        model="openai:gpt-4o", model_overrides={"openai:gpt-4o": {"max_input_tokens": WINDOW}}
    )
    english = (
        "Here is some background on the project, its modules and the tests that cover them. " * 50
    )
    events = []
    async with await Engine.open(settings) as engine:
        if encoding_state == "warm":
            engine.tokens.warm()
        runner = engine.runner(HeadlessApprover())
        for turn in range(3):
            async for event in runner.run_turn(f"{turn}: {english}"):
                events.append(event)
        assert not [e for e in events if isinstance(e, CompactionFinished)]
        paste = "".join(f"第{n}句：{SENTENCE}" for n in range(230))  # noqa: RUF001 - Chinese punctuation
        async for event in runner.run_turn(paste):
            events.append(event)
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert [e for e in events if isinstance(e, CompactionFinished)]
    assert max(openai_input_tokens(request.body) for request in server.requests) <= WINDOW
