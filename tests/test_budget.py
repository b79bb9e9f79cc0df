"""Budgets: a session's spend cap in USD or tokens, through the real loop on the scripted server.

Subagents and compaction count, the levels 50/80/100 % are said once each, the cap stops the
turn before the next model request with one line, a raise lets the session go on (a resumed one
too, from the spend its store kept), headless exits 1 with ``budget_exceeded`` in its result,
and a project's config cannot set or raise the cap.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.budget import (
    COMPACTION,
    AgentBudget,
    BudgetReached,
    Limits,
    SessionBudget,
    Tariff,
    UsageRow,
    budget_line,
    raised_limits,
    usage_lines,
)
from dcode.agent.engine import Engine
from dcode.agent.events import (
    BudgetWarning,
    CompactionFinished,
    ErrorEvent,
    Event,
    SubagentFinished,
    TurnFinished,
)
from dcode.agent.store.base import SessionStore
from dcode.agent.tools.spec import LS
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.cli.sessions import show_session
from dcode.settings.config import load_settings
from dcode.settings.trust import ProjectFiles, TrustStore
from tests.support.model_server import reply, tool_call

MODEL = "openai:test-model"
PRICED = {MODEL: {"input_price": 1.0, "output_price": 2.0}}
PROMPT = "map the project"
JOB = "List the files at the root and say what they are."


def task_call(description: str) -> object:
    return tool_call("task", {"description": description, "subagent_type": "general-purpose"})


async def run(engine: Engine, prompt: str, session_id: str | None = None):
    runner = engine.runner(HeadlessApprover(), session_id=session_id)
    events: list[Event] = [event async for event in runner.run_turn(prompt)]
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    return runner, events, finished


def warnings(events: list[Event]) -> list[tuple[int, tuple[str, ...]]]:
    return [(e.level, e.agent) for e in events if isinstance(e, BudgetWarning)]


async def test_a_session_crosses_each_level_once_and_stops_at_its_token_cap(
    server, make_settings, api: str, store: SessionStore
) -> None:
    server.script(
        reply("Delegating.", tool_calls=[task_call(JOB)], usage=(200, 50)).answering(PROMPT),
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], usage=(200, 50)).answering(JOB),
        reply("Nothing but a README.", reasoning="look first", usage=(250, 50)).answering(JOB),
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], usage=(150, 50)).answering(PROMPT),
        reply("The project holds a README.", usage=(100, 10)),
    )
    settings = make_settings(api, budget_tokens=1000)
    async with await Engine.open(settings) as engine:
        runner, events, finished = await run(engine, PROMPT)
        # 250 (main), 500 and 800 (the subagent), 1000 (main): each level once, then the stop.
        assert warnings(events) == [(50, ("task:1",)), (80, ("task:1",)), (100, ())]
        line = "budget reached (1,000 of 1,000 tokens); /budget to raise"
        assert [(e.message, e.kind) for e in events if isinstance(e, ErrorEvent)] == [
            (line, "budget")
        ]
        assert finished.is_error and finished.budget_exceeded and finished.error == line
        assert len(server.requests) == 4  # the fifth request was never sent
        done = next(e for e in events if isinstance(e, SubagentFinished))
        assert not done.error  # the subagent finished within the budget
        rows = {(row.model, row.agent): row for row in store.usage(runner.session_id)}
        assert set(rows) == {(MODEL, "main"), (MODEL, "general-purpose")}
        assert (rows[MODEL, "main"].input_tokens, rows[MODEL, "main"].output_tokens) == (350, 100)
        sub = rows[MODEL, "general-purpose"]
        assert (sub.input_tokens, sub.output_tokens) == (450, 100) and sub.reasoning_tokens > 0
        assert sub.cost_usd is None  # the test model has no prices

        # Nothing lost: the tool call's result is in the thread, and after a raise the turn
        # goes on from there, with no new message.
        messages = await runner.messages()
        assert messages[-1].type == "tool"
        runner.limits = raised_limits(runner.limits, "2k tokens")
        events = [event async for event in runner.run_turn(None)]
        assert not events[-1].is_error and events[-1].result == "The project holds a README."
        assert warnings(events) == []  # 50 % of 2,000 was already behind when it was raised
        assert server.requests[4].transcript()[-1][0] == "tool"
        assert [m.type for m in await runner.messages()][len(messages) :] == ["ai"]
        sid = runner.session_id

    # A resume counts what the store kept: 1,110 of 1,200 is past 80 %, then 100 % is crossed.
    server.script(reply("Still a README.", usage=(80, 20)))
    async with await Engine.open(make_settings(api, budget_tokens=1200)) as engine:
        runner, events, finished = await run(engine, "anything else?", sid)
        assert warnings(events) == [(100, ())] and not finished.is_error
        runner, events, finished = await run(engine, "and now?", sid)
        assert finished.budget_exceeded
        assert finished.error == "budget reached (1,210 of 1,200 tokens); /budget to raise"
    assert len(server.requests) == 6


async def test_a_subagent_at_the_cap_ends_its_call_and_the_parent_stops(
    server, make_settings, api: str
) -> None:
    server.script(
        reply("Delegating.", tool_calls=[task_call(JOB)], usage=(300, 20)).answering(PROMPT),
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], usage=(400, 30)).answering(JOB),
        reply("never sent", repeat=True),
    )
    async with await Engine.open(make_settings(api, budget_tokens=700)) as engine:
        _, events, finished = await run(engine, PROMPT)
    done = next(e for e in events if isinstance(e, SubagentFinished))
    line = "budget reached (750 of 700 tokens); /budget to raise"
    assert done.error == line  # the subagent's own next request was not sent
    assert finished.budget_exceeded and finished.error == line
    assert len(server.requests) == 2


async def test_headless_exits_1_with_the_line_and_says_budget_exceeded(
    server, make_settings, api: str
) -> None:
    server.script(
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], usage=(1000, 100)),
        reply("never sent", repeat=True),
    )
    settings = make_settings(api, model_overrides=PRICED, budget_usd=0.001)
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(settings, HeadlessRequest("go", OutputFormat.JSON), out=out, err=err)
    assert code == 1
    assert "dcode: error: budget reached ($0.0012 of $0.001); /budget to raise" in err.getvalue()
    result = json.loads(out.getvalue().splitlines()[-1])
    assert result["budget_exceeded"] is True and result["is_error"] is True
    assert len(server.requests) == 1

    server.script(reply("fine", usage=(10, 1)))
    out = io.StringIO()
    code = await run_headless(
        make_settings(api, model_overrides=PRICED, budget_usd=5.0),
        HeadlessRequest("go", OutputFormat.STREAM_JSON),
        out=out,
        err=io.StringIO(),
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0 and lines[-1]["type"] == "result" and lines[-1]["budget_exceeded"] is False
    assert lines[-2]["type"] == TurnFinished.type and lines[-2]["budget_exceeded"] is False


async def test_stream_json_says_the_warnings_and_the_stop(server, make_settings) -> None:
    server.script(
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], usage=(90, 10)),
        reply("never sent", repeat=True),
    )
    out = io.StringIO()
    code = await run_headless(
        make_settings("chat", budget_tokens=100),
        HeadlessRequest("go", OutputFormat.STREAM_JSON),
        out=out,
        err=io.StringIO(),
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 1
    assert [line["level"] for line in lines if line["type"] == BudgetWarning.type] == [50, 80, 100]
    assert lines[-1]["budget_exceeded"] is True and lines[-2]["budget_exceeded"] is True


async def test_compaction_counts_and_cost_shows_by_model_and_agent(
    server, make_settings, store: SessionStore
) -> None:
    server.script(
        reply("first answer. " * 300, usage=(1000, 100)),
        reply("second answer. " * 300, usage=(1000, 100)),
        reply("third answer", usage=(1000, 100)),
        reply("A summary of the older messages.", usage=(500, 50)),
    )
    settings = make_settings("chat", model_overrides=PRICED, budget_usd=10.0)
    async with await Engine.open(settings) as engine:
        runner, _, _ = await run(engine, "one")
        await run(engine, "two", runner.session_id)
        await run(engine, "three", runner.session_id)
        compacted = await runner.compact()
        assert any(isinstance(event, CompactionFinished) for event in compacted), compacted
        budget = await runner.budget()
    rows = {row.agent: row for row in store.usage(runner.session_id)}
    assert rows[COMPACTION].input_tokens == 500 and rows[COMPACTION].output_tokens == 50
    assert rows["main"].cost_usd == pytest.approx(3 * (1000 + 200) / 1e6)
    assert budget.spent_tokens == 3 * 1100 + 550
    assert budget_line(budget) == "budget: $0.0042 of $10.00 · 3,850 tokens (no token cap)"

    shown = show_session(settings, runner.session_id, usage=True)
    lines = shown.splitlines()
    assert lines[lines.index("by model:") + 2].split() == [
        MODEL,
        "3,500",
        "0",
        "350",
        "0",
        "$0.0042",
    ]
    by_agent = lines[lines.index("by agent:") + 1 :]
    assert [line.split()[0] for line in by_agent[1:]] == ["main", COMPACTION, "total"]
    assert "\n".join(usage_lines(store.usage(runner.session_id))) in shown


def test_usage_lines_merge_by_model_and_by_agent() -> None:
    rows = [
        UsageRow("a:big", "main", 1000, 200, 100, 40, 0.5),
        UsageRow("a:big", "explore", 500, 0, 50, 0, 0.25),
        UsageRow("local:small", "explore", 300, 0, 30, 0, None),
    ]
    lines = usage_lines(rows)
    models = lines[lines.index("by model:") + 2 : lines.index("by agent:")]
    assert [line.split() for line in models] == [
        ["a:big", "1,500", "200", "150", "40", "$0.75"],
        ["local:small", "300", "0", "30", "0", "—"],
    ]
    agents = lines[lines.index("by agent:") + 2 :]
    assert [line.split() for line in agents] == [
        ["main", "1,000", "200", "100", "40", "$0.50"],
        ["explore", "800", "0", "80", "0", "$0.25"],
        ["total", "1,800", "200", "180", "40", "$0.75"],
    ]
    assert usage_lines([]) == ["no usage recorded for this session"]


def test_budget_words_and_levels() -> None:
    limits = Limits(usd=1.0)
    assert raised_limits(limits, "$2.50") == Limits(usd=2.5)
    assert raised_limits(limits, "200k tokens") == Limits(usd=1.0, tokens=200_000)
    assert raised_limits(limits, "1,500 tokens").tokens == 1500
    for bad in ("lots", "0", "-1", "k tokens", "inf"):
        with pytest.raises(ValueError, match="/budget takes"):
            raised_limits(limits, bad)
    budget = SessionBudget.starting(Limits(usd=1.0), [UsageRow("m", "main", 10, 0, 1, 0, 0.85)])
    assert budget.level() == 80 and budget.reached() == ""
    budget.raise_to(Limits(usd=0.8))
    assert budget.reached() == "budget reached ($0.85 of $0.80); /budget to raise"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_cannot_set_or_raise_the_budget(
    home: Path, workspace: Path, trusted: bool
) -> None:
    write(home / "config.toml", "budget_usd = 2.0\nbudget_tokens = 50000\n")
    write(
        workspace / ".dcode" / "config.toml",
        "budget_usd = 1000000.0\nbudget_tokens = 999999999\nmax_turns = 3\n",
    )
    if trusted:
        TrustStore(home).trust(workspace, ProjectFiles.read(workspace).digest)
    env = {"DCODE_HOME": str(home)}
    settings = load_settings(workspace=workspace, env=env)
    assert (settings.budget_usd, settings.budget_tokens) == (2.0, 50000)
    assert settings.max_turns == 3  # the file itself was read
    (home / "config.toml").unlink()
    settings = load_settings(workspace=workspace, env=env)
    assert (settings.budget_usd, settings.budget_tokens) == (None, None)
    cli = {"budget_usd": 0.5, "budget_tokens": 100}
    settings = load_settings(workspace=workspace, env=env, cli=cli)
    assert (settings.budget_usd, settings.budget_tokens) == (0.5, 100)


def test_the_command_line_caps_a_run_and_shows_its_usage(
    server, workspace: Path, home: Path
) -> None:
    from tests.test_cli_headless import model_args
    from tests.test_cli_headless import run as run_dcode

    server.script(
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], reasoning="think", usage=(90, 20)),
        reply("never sent", repeat=True),
    )
    result = run_dcode(
        ["-p", "look", *model_args(server), "--max-tokens", "100", "--output-format", "json"],
        workspace,
        home,
    )
    assert result.returncode == 1
    assert "dcode: error: budget reached (110 of 100 tokens); /budget to raise" in result.stderr
    data = json.loads(result.stdout)
    assert data["budget_exceeded"] is True and len(server.requests) == 1

    shown = run_dcode(["sessions", "show", data["session_id"], "--usage"], workspace, home)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    row = lines[lines.index("by agent:") + 2].split()
    assert row[:4] == ["main", "90", "0", "20"] and int(row[4]) > 0 and row[5] == "—"

    bad = run_dcode(["-p", "x", *model_args(server), "--max-budget-usd", "0"], workspace, home)
    assert bad.returncode == 2 and "budget_usd" in bad.stderr


def test_the_store_adds_usage_by_model_and_agent_and_forgets_it_with_the_session(
    store: SessionStore, workspace: Path
) -> None:
    store.create("s1", workspace, MODEL)
    store.record_usage("s1", [UsageRow(MODEL, "main", 10, 2, 3, 1, None)])
    store.record_usage(
        "s1",
        [UsageRow(MODEL, "main", 10, 2, 3, 1, None), UsageRow(MODEL, "explore", 5, 0, 1, 0, 0.5)],
    )
    assert store.usage("s1") == [
        UsageRow(MODEL, "explore", 5, 0, 1, 0, 0.5),
        UsageRow(MODEL, "main", 20, 4, 6, 2, None),
    ]
    store.record_usage("s1", [UsageRow(MODEL, "main", 1, 0, 1, 0, 0.25)])
    assert store.usage("s1")[1].cost_usd == 0.25  # priced from the first answer with prices
    assert store.delete("s1") and store.usage("s1") == []


def test_an_older_database_reads_no_usage_and_gains_the_table(tmp_path: Path) -> None:
    import sqlite3

    from dcode.agent.store.sqlite import SqliteStore

    db = tmp_path / "sessions.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            """CREATE TABLE dcode_sessions (id TEXT PRIMARY KEY, cwd TEXT NOT NULL, model TEXT NOT NULL,
               title TEXT NOT NULL DEFAULT '', created REAL NOT NULL, updated REAL NOT NULL,
               message_count INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
               output_tokens INTEGER NOT NULL DEFAULT 0, context_tokens INTEGER NOT NULL DEFAULT 0)"""
        )
    conn.close()
    assert SqliteStore(db, tmp_path, read_only=True).usage("old") == []
    with sqlite3.connect(db) as conn:  # the reader made nothing
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "dcode_usage" not in tables
    SqliteStore(db, tmp_path).record_usage("old", [UsageRow(MODEL, "main", 1, 0, 1, 0, None)])
    assert SqliteStore(db, tmp_path, read_only=True).usage("old")[0].tokens == 2


async def test_offload_at_the_cap_asks_for_nothing(server, make_settings) -> None:
    server.script(reply("an answer. " * 300, usage=(900, 100)), reply("never sent", repeat=True))
    async with await Engine.open(make_settings("chat", budget_tokens=1000)) as engine:
        runner, _, _ = await run(engine, "one")
        events = await runner.compact()
    assert [getattr(e, "message", None) for e in events] == [
        "budget reached (1,000 of 1,000 tokens); /budget to raise"
    ]
    assert len(server.requests) == 1


async def test_a_session_from_before_usage_rows_counts_its_totals(
    server, make_settings, workspace: Path
) -> None:
    server.script(reply("ok", usage=(10, 5)))
    async with await Engine.open(make_settings("chat", model_overrides=PRICED)) as engine:
        engine.store.create("0123456789ab", workspace, MODEL)
        engine.store.record_turn(
            "0123456789ab",
            prompt="before",
            model=MODEL,
            message_count=2,
            input_tokens=1000,
            output_tokens=100,
            context_tokens=1100,
        )
        runner, _, finished = await run(engine, "now", "0123456789ab")
        assert not finished.is_error
        budget = await runner.budget()
    assert budget.spent_tokens == 1100 + 15  # the earlier totals, then the rows
    assert budget.spent_usd == pytest.approx((1000 + 200 + 10 + 10) / 1e6)


async def test_a_served_budget_reads_the_stored_spend_once_and_keeps_each_charge(
    make_settings, store: SessionStore, workspace: Path
) -> None:
    """A served run's budget (``dcode.server.host.StoredUsage`` over the real store): agents
    checking at once read the spend before the run once, after the writes still under way; each
    charge is stored behind the run, in order."""
    from langchain_core.messages import AIMessage

    from dcode.models.factory import resolve_model
    from dcode.server.host import StoredUsage

    book = StoredUsage(store, "served-thread", workspace, MODEL)
    assert await book.spent() == []  # the session's record is made on first use
    assert store.get("served-thread") is not None
    await book.record([UsageRow(MODEL, "main", 600, 0, 100)])
    budget = AgentBudget(SessionBudget(Limits(tokens=1000), book=book))
    await asyncio.gather(budget.acheck(), budget.for_agent("helper").acheck())
    assert budget.session.spent_tokens == 700  # read once, not once per agent
    resolved = resolve_model(make_settings("chat"))
    answer = AIMessage(
        content="done",
        usage_metadata={"input_tokens": 250, "output_tokens": 100, "total_tokens": 350},
    )
    said: list[Event] = []
    await budget.acharge(Tariff(MODEL, resolved.profile), answer, said.append)
    assert [e.level for e in said if isinstance(e, BudgetWarning)] == [80, 100]
    await book.writes.settled()
    assert sum(row.tokens for row in store.usage("served-thread")) == 1050
    with pytest.raises(BudgetReached, match=r"^budget reached \(1,050 of 1,000 tokens\)"):
        await budget.acheck()


async def test_a_served_session_writes_behind_its_runs_in_order(
    store: SessionStore, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The writes of a served session are not awaited by the run that makes them: they run one
    after the other, in order; one that fails is logged and the next still runs; a read of the
    spend waits for them all. A run without a limit never reads the spend before it."""
    from dcode.server.host import StoredUsage

    book = StoredUsage(store, "behind", workspace, MODEL)
    await book.prompted("first prompt", 1)
    for tokens in (100, 200, 300):
        await book.record([UsageRow(MODEL, "main", tokens, 0, 0)])

    def fails() -> None:
        raise RuntimeError("the disk is full")

    book.writes.add(fails)
    await book.record([UsageRow(MODEL, "main", 4, 0, 0)])
    assert [row.tokens for row in await book.spent()] == [604]
    assert store.get("behind") is not None
    assert "the disk is full" in caplog.text

    unread = SessionBudget(Limits(), book=book)
    await AgentBudget(unread).acheck()
    assert unread.spent_tokens == 0  # no limit: the spend before is not read
