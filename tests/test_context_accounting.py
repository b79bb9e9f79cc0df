"""/context: where the next request's tokens go, from a real session, and the screen that shows it."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.middleware.memory import memory_prompt
from dcode.context.accounting import Spend, estimate_text
from dcode.context.tokens.calibration import LOW
from dcode.tui.screens.context import ContextScreen, spend_line
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import running_app


def figures(report) -> dict[str, int]:  # a ContextReport
    return {category.name: category.tokens for category in report.categories}


async def test_the_categories_follow_the_session(
    server: ScriptedModelServer, make_settings, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text("Run the tests with `make check`.\n")
    server.script(reply("a short answer", usage=(1_234, 5)), reply("SUMMARY."), reply("after"))
    settings = make_settings(model_overrides={"openai:test-model": {"max_input_tokens": 100_000}})
    async with await Engine.open(settings) as engine:
        empty = await engine.context_report(None)
        assert figures(empty)["messages: user"] == 0 and empty.reported is None
        memory = {str(workspace.resolve() / "AGENTS.md"): "Run the tests with `make check`."}
        assert figures(empty)["memory"] == estimate_text(
            memory_prompt(memory), engine.tokens
        )  # what the first turn reads
        assert figures(empty)["system prompt"] > 100 and figures(empty)["tool schemas"] > 100
        runner = engine.runner(HeadlessApprover())
        async for _ in runner.run_turn("what is " + "long " * 400 + "?"):
            pass
        report = await engine.context_report(runner.session_id)
        seen = figures(report)
        # The scripted 1,234 input tokens are far below dcode's count: the session's
        # calibration scales every estimate down, as far as its bound.
        assert engine.tokens.calibration(runner.session_id).factor == LOW
        assert seen["messages: user"] > 400 * LOW and seen["messages: assistant"] > 0
        assert seen["memory"] == estimate_text(
            memory_prompt(
                {str(workspace.resolve() / "AGENTS.md"): "Run the tests with `make check`."}
            ),
            engine.tokens,
            runner.session_id,
        )
        assert seen["local context"] > 0 and report.reported == 1_234
        assert (
            report.used == sum(seen.values())
            and report.before_compaction == report.trigger - report.used
        )
        assert report.trigger == 85_000 and report.reserve == 15_000 and not report.compacted
        async for _ in runner.run_turn("and now?"):
            pass
        await runner.compact()  # the long first exchange becomes a summary
        compacted = await engine.context_report(runner.session_id)
        assert compacted.compacted and figures(compacted)["messages: user"] < seen["messages: user"]


async def test_context_names_each_memory_file_with_its_tokens(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """A project that keeps its notes for Claude Code: /context says which files were read,
    before the first prompt (what it will read) and after it (what the session holds)."""
    (workspace / "CLAUDE.md").write_text("Use pnpm, not npm.\n" * 20)
    (workspace / "CLAUDE.local.md").write_text("My port is 3001.\n")
    async with running_app(server, workspace, dcode_home, reply("noted")) as h:
        for turn in ("before", "after"):
            if turn == "after":
                await h.send("hi")
                await h.idle()
            await h.send("/context")
            await h.until(
                lambda: isinstance(h.app.screen, ContextScreen), what="the context screen"
            )
            assert isinstance(h.app.screen, ContextScreen)
            memory = next(c for c in h.app.screen.report.categories if c.name == "memory")
            assert memory.detail == "2 files" and [part.name for part in memory.parts] == [
                "CLAUDE.md",
                "CLAUDE.local.md",
            ]
            assert (
                memory.parts[0].tokens > memory.parts[1].tokens > 0
                and sum(p.tokens for p in memory.parts) < memory.tokens
            )
            rows = [
                line.strip()
                for line in str(
                    h.app.screen.query_one("#context-table", Static).content
                ).splitlines()
            ]
            assert any(
                row.startswith("CLAUDE.md") and f"~{memory.parts[0].tokens:,}" in row
                for row in rows
            ), turn
            assert any(row.startswith("CLAUDE.local.md") for row in rows)
            await h.pilot.press("escape")
            await h.until(
                lambda: not isinstance(h.app.screen, ContextScreen), what="the screen to close"
            )
        assert "Use pnpm, not npm." in str(
            server.requests[0].body
        )  # what /context named is what was sent


async def test_context_opens_over_the_transcript_and_closes(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("hello there")) as h:
        await h.send("hi")
        await h.idle()
        await h.send("/context")
        await h.until(lambda: isinstance(h.app.screen, ContextScreen), what="the context screen")
        await h.pilot.pause()
        text = h.text()
        for name in (
            "system prompt",
            "tool schemas",
            "messages: user",
            "free before compaction",
            "reserve",
        ):
            assert name in text
        assert "openai:test-model" in text and "estimated" in text
        await h.pilot.press("escape")
        await h.until(
            lambda: not isinstance(h.app.screen, ContextScreen), what="the screen to close"
        )


async def test_context_and_cost_count_the_cached_input(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from tests.test_tui_app_support import make_settings

    priced = {
        "openai:test-model": {"input_price": 1.0, "output_price": 2.0, "cached_input_price": 0.1}
    }
    settings = make_settings(dcode_home, workspace, server, model_overrides=priced)
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply("hello", usage=(400_000, 1_000), cached_tokens=300_000),
        settings=settings,
    ) as h:
        await h.send("hi")
        await h.idle()
        assert h.app.status.cost == pytest.approx(0.132)  # 100,000 + 0.1 × 300,000 + 2 × 1,000
        await h.send("/context")
        await h.until(lambda: isinstance(h.app.screen, ContextScreen), what="the context screen")
        await h.pilot.pause()
        summary, spend = (
            str(h.app.screen.query_one(f"#context-{part}", Static).content)
            for part in ("summary", "spend")
        )
        assert (
            "400,000 input tokens for the last one (300,000 of them from its prompt cache)"
            in summary
        )
        assert (
            spend == "This session: 400,000 input tokens (300,000 cached) · 1,000 output · $0.1320"
        )


def test_the_spend_line_says_how_cached_input_was_priced() -> None:
    unpriced = str(spend_line(Spend(400_000, 300_000, 1_000, 0.402, cached_priced=False)).plain)
    assert unpriced.endswith(
        "$0.4020 · cached input priced as other input (no cached price known for this model)"
    )
    assert str(spend_line(Spend(10, 0, 1, 0.5, cached_priced=False)).plain).endswith("$0.5000")
    assert str(spend_line(Spend(10, 5, 1, None, cached_priced=False)).plain).endswith(
        "· no price known for this model"
    )


async def test_the_context_screen_explains_how_its_figures_are_counted(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from tests.test_tui_app_support import make_settings

    server.input_scale = (
        1.3  # a tokenizer that needs 30% more tokens than the one dcode counts with
    )
    settings = make_settings(dcode_home, workspace, server, model="openai:qwen3-coder")
    async with running_app(
        server, workspace, dcode_home, reply("hello there"), settings=settings
    ) as h:
        await h.send("hi " * 400)
        await h.idle()
        await h.send("/context")
        await h.until(lambda: isinstance(h.app.screen, ContextScreen), what="the context screen")
        await h.pilot.pause()
        hint = " ".join(str(h.app.screen.query_one("#context-hint", Static).content).split())
    assert hint.startswith(
        "~ marks dcode's estimate. dcode counts with o200k_base (this model's own tokenizer is not shipped)"
    )
    assert (
        "the provider has counted this session's requests at ×1.30 dcode's figures, so the estimates are scaled by that."
        in hint
    )
    assert (
        "input tokens for the last request; dcode's count before scaling was 23." in hint
        and "% below it." in hint
    )
    assert hint.endswith("Esc or q to close")
