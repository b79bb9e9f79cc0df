"""/context: where the next request's tokens go, from a real session, and the screen that shows it."""

from __future__ import annotations

from pathlib import Path

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.middleware.memory import memory_prompt
from dcode.context.accounting import estimate_text
from dcode.tui.screens.context import ContextScreen
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import running_app


def figures(report) -> dict[str, int]:  # noqa: ANN001 - a ContextReport
    return {category.name: category.tokens for category in report.categories}


async def test_the_categories_follow_the_session(server: ScriptedModelServer, make_settings, workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Run the tests with `make check`.\n")
    server.script(reply("a short answer", usage=(1_234, 5)), reply("SUMMARY."), reply("after"))
    settings = make_settings(model_overrides={"openai:test-model": {"max_input_tokens": 100_000}})
    async with await Engine.open(settings) as engine:
        empty = await engine.context_report(None)
        assert figures(empty)["messages: user"] == 0 and empty.reported is None and figures(empty)["memory"] == 0
        assert figures(empty)["system prompt"] > 100 and figures(empty)["tool schemas"] > 100
        runner = engine.runner(HeadlessApprover())
        async for _ in runner.run_turn("what is " + "long " * 400 + "?"):
            pass
        report = await engine.context_report(runner.session_id)
        seen = figures(report)
        assert seen["messages: user"] > 400 and seen["messages: assistant"] > 0
        assert seen["memory"] == estimate_text(memory_prompt({str(workspace.resolve() / "AGENTS.md"): "Run the tests with `make check`."}))
        assert seen["local context"] > 0 and report.reported == 1_234
        assert report.used == sum(seen.values()) and report.before_compaction == report.trigger - report.used
        assert report.trigger == 85_000 and report.reserve == 15_000 and not report.compacted
        async for _ in runner.run_turn("and now?"):
            pass
        await runner.compact()  # the long first exchange becomes a summary
        compacted = await engine.context_report(runner.session_id)
        assert compacted.compacted and figures(compacted)["messages: user"] < seen["messages: user"]


async def test_context_opens_over_the_transcript_and_closes(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home, reply("hello there")) as h:
        await h.send("hi")
        await h.idle()
        await h.send("/context")
        await h.until(lambda: isinstance(h.app.screen, ContextScreen), what="the context screen")
        await h.pilot.pause()
        text = h.text()
        for name in ("system prompt", "tool schemas", "messages: user", "free before compaction", "reserve"):
            assert name in text
        assert "openai:test-model" in text and "estimated" in text
        await h.pilot.press("escape")
        await h.until(lambda: not isinstance(h.app.screen, ContextScreen), what="the screen to close")
