"""Cached input tokens: what the provider says it read from its prompt cache reaches the typed
events, the session's record, its cost and ``/context``, on both wires and across a resume."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import TurnFinished, UsageUpdated
from dcode.agent.store.base import SessionStore
from dcode.agent.store.sqlite import SqliteStore
from dcode.agent.tools.spec import LS
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.context.accounting import Spend
from dcode.models.profiles import ModelProfile, resolve_profile
from dcode.models.usage import cached_input_tokens
from tests.support.model_server import reply, tool_call

PRICED = {"openai:test-model": {"input_price": 1.0, "output_price": 2.0, "cached_input_price": 0.1}}


async def run(
    engine: Engine, session_id: str | None, prompt: str
) -> tuple[str, list[UsageUpdated], TurnFinished]:
    runner = engine.runner(HeadlessApprover(), session_id=session_id)
    usage, finished = [], None
    async for event in runner.run_turn(prompt):
        if isinstance(event, UsageUpdated):
            usage.append(event)
        elif isinstance(event, TurnFinished):
            finished = event
    assert finished is not None and not finished.is_error, finished
    return runner.session_id, usage, finished


async def test_cached_tokens_reach_events_session_cost_and_context(
    server, make_settings, api: str, store: SessionStore
) -> None:
    server.script(
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], usage=(1000, 10)),
        reply("done", usage=(1200, 20), cached_tokens=1000),
        reply("again", usage=(1300, 5), cached_tokens=1200),
    )
    settings = make_settings(api, model_overrides=PRICED)
    async with await Engine.open(settings) as engine:
        session_id, usage, finished = await run(engine, None, "look around")
    assert [(u.cached_tokens, u.session_cached_tokens) for u in usage] == [(0, 0), (1000, 1000)]
    assert finished.cached_tokens == 1000 and finished.input_tokens == 2200
    assert store.get(session_id).cached_tokens == 1000

    async with await Engine.open(settings) as engine:  # a resume in a new engine
        _, usage, finished = await run(engine, session_id, "once more")
        report = await engine.context_report(session_id)
    assert [(u.cached_tokens, u.session_cached_tokens, u.session_input_tokens) for u in usage] == [
        (1200, 2200, 3500)
    ]
    assert report.reported == 1300 and report.cached == 1200
    expected = ((3500 - 2200) * 1.0 + 2200 * 0.1 + 35 * 2.0) / 1_000_000
    assert report.spend == Spend(3500, 2200, 35, pytest.approx(expected), True)


async def test_headless_json_reports_cached_input_tokens(server, make_settings, api: str) -> None:
    server.script(reply("hi", usage=(500, 3), cached_tokens=384))
    out = io.StringIO()
    code = await run_headless(
        make_settings(api),
        HeadlessRequest("hello", OutputFormat.STREAM_JSON),
        out=out,
        err=io.StringIO(),
    )
    assert code == 0
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    usage = [event for event in events if event["type"] == UsageUpdated.type]
    assert [(event["cached_tokens"], event["session_cached_tokens"]) for event in usage] == [
        (384, 384)
    ]
    result = events[-1]
    assert result["type"] == "result" and result["usage"] == {
        "input_tokens": 500,
        "output_tokens": 3,
        "cached_input_tokens": 384,
    }


def test_cost_prices_cached_input_at_its_own_price() -> None:
    known = {"max_input_tokens": 400_000, "max_output_tokens": 128_000}
    profile = resolve_profile("openai", "gpt-5.1", known=known)
    assert (profile.input_price, profile.cached_input_price, profile.output_price) == (
        1.25,
        0.125,
        10.0,
    )
    assert profile.cost(1_000_000, 0, cached_tokens=800_000) == pytest.approx(
        0.2 * 1.25 + 0.8 * 0.125
    )
    assert profile.cost(1_000_000, 1_000_000) == pytest.approx(1.25 + 10.0)
    # Without a cached price, cached input costs what other input does (an upper bound).
    plain = ModelProfile(input_price=1.0, output_price=2.0)
    assert plain.cost(1000, 10, cached_tokens=900) == plain.cost(1000, 10)
    assert Spend.of(1000, 10, 900, plain).cached_priced is False
    assert ModelProfile().cost(1000, 10, 900) is None


def test_cached_input_price_and_cache_key_can_be_configured() -> None:
    table = {"openai:mine": {"cached_input_price": 1, "prompt_cache_key": True}}
    profile = resolve_profile("openai", "mine", overrides=table)
    assert profile.cached_input_price == 1.0 and profile.prompt_cache_key is True
    from dcode.settings.config import ConfigError

    with pytest.raises(ConfigError, match="prompt_cache_key must be bool"):
        resolve_profile("openai", "mine", overrides={"openai:mine": {"prompt_cache_key": "yes"}})


def test_cache_reads_on_every_service_tier() -> None:
    assert cached_input_tokens({"input_tokens": 10, "input_token_details": {"cache_read": 7}}) == 7
    assert (
        cached_input_tokens(
            {"input_token_details": {"priority_cache_read": 5, "cache_creation": 3}}
        )
        == 5
    )
    assert cached_input_tokens({"input_tokens": 10}) == 0 and cached_input_tokens(None) == 0


def test_an_older_sessions_database_gains_the_column(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            """CREATE TABLE dcode_sessions (id TEXT PRIMARY KEY, cwd TEXT NOT NULL, model TEXT NOT NULL,
               title TEXT NOT NULL DEFAULT '', created REAL NOT NULL, updated REAL NOT NULL,
               message_count INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
               output_tokens INTEGER NOT NULL DEFAULT 0, context_tokens INTEGER NOT NULL DEFAULT 0)"""
        )
        conn.execute(
            "INSERT INTO dcode_sessions (id, cwd, model, created, updated) VALUES ('old', '/w', 'm', 1, 1)"
        )
    conn.close()
    assert SqliteStore(db, tmp_path, read_only=True).get("old").cached_tokens == 0
    store = SqliteStore(db, tmp_path)
    store.record_turn(
        "old",
        prompt="p",
        model="m",
        message_count=2,
        input_tokens=10,
        output_tokens=1,
        context_tokens=11,
        cached_tokens=6,
    )
    store.record_turn(
        "old",
        prompt="p",
        model="m",
        message_count=4,
        input_tokens=10,
        output_tokens=1,
        context_tokens=11,
        cached_tokens=8,
    )
    info = store.get("old")
    assert (info.input_tokens, info.cached_tokens) == (20, 14)
