"""Budgets in the TUI: the levels in the status bar and as notices, the stop's line, ``/budget``
to show and raise (the turn it ended goes on), and ``/cost`` with the same lines as ``dcode
sessions show --usage``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dcode.agent.budget import usage_lines
from dcode.agent.store.sqlite import SqliteStore
from dcode.agent.tools.spec import LS
from dcode.cli.sessions import show_session
from dcode.tui.transcript import NoticeEntry, NoticeLevel
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import make_settings, running_app


def notices(h) -> list[NoticeEntry]:  # the Harness
    return h.entries(NoticeEntry)


async def test_levels_stop_raise_and_cost(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    settings = replace(make_settings(dcode_home, workspace, server), budget_tokens=200)
    steps = (
        reply(tool_calls=[tool_call(LS.name, {"path": "."})], usage=(90, 10)),
        reply("nothing here", usage=(40, 10)),
        reply("after the raise", usage=(40, 10)),
    )
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("/budget")
        await h.until(
            lambda: any("no token cap" in n.text or "of 200 tokens" in n.text for n in notices(h)),
            what="the budget line",
        )
        await h.send("/approve all")
        await h.send("look around")
        await h.idle()
        said = [n for n in notices(h) if n.level is NoticeLevel.WARNING]
        assert [n.text for n in said] == ["50% of the session's budget spent (100 of 200 tokens)"]
        assert h.app.status.budget == 50 and "budget 50%" in h.text()
        await h.send("/budget 100 tokens")  # lowered: the session is at its cap now
        await h.until(
            lambda: any(
                n.text == "budget: $0.00 (no USD cap) · 150 of 100 tokens" for n in notices(h)
            ),
            what="the lowered budget",
        )
        assert h.app.status.budget == 100
        await h.send("go on")
        line = "budget reached (150 of 100 tokens); /budget to raise"
        await h.until(
            lambda: any(n.text == line and n.level is NoticeLevel.ERROR for n in notices(h)),
            what="the stop",
        )
        await h.idle()
        assert len(server.requests) == 2
        await h.send("/budget 1k tokens")
        await h.until(lambda: h.app.status.budget == 0, what="the raise in the status bar")
        # The turn the budget ended goes on by itself, from the prompt it had not answered.
        await h.until(lambda: h.answers()[-1:] == ["after the raise"], what="the turn going on")
        await h.idle()
        assert server.requests[2].transcript()[-1] == ("user", "go on")
        assert h.prompts() == ["look around", "go on"]
        await h.send("/cost")
        session_id = h.app.runner.session_id
        rows = h.app.engine.store.usage(session_id)
        expected = "\n".join(usage_lines(rows))
        await h.until(lambda: any(n.text == expected for n in notices(h)), what="the cost lines")
    assert expected in show_session(settings, session_id, usage=True)
    assert [(r.agent, r.input_tokens, r.output_tokens) for r in rows] == [("main", 170, 30)]


async def test_a_resumed_session_shows_the_level_its_stored_spend_reached(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from tests.test_tui_app_support import one_session

    session_id = await one_session(server, workspace, dcode_home)
    spent = sum(
        row.tokens for row in SqliteStore(dcode_home / "sessions.db", dcode_home).usage(session_id)
    )
    assert spent > 5_020
    settings = replace(make_settings(dcode_home, workspace, server), budget_tokens=int(spent * 1.1))
    async with running_app(
        server, workspace, dcode_home, settings=settings, session_id=session_id
    ) as h:
        await h.until(lambda: f"Resumed session {session_id}" in h.text(), what="the resumed line")
        assert h.app.status.budget == 80 and "budget 80%" in h.text()
        assert not any(n.level is NoticeLevel.WARNING for n in notices(h))  # said when crossed
