"""Sessions: resuming with the transcript shown, the picker, /clear, windowed long transcripts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from dcode.agent.engine import Engine
from dcode.agent.events import ToolStatus
from dcode.agent.store import open_store
from dcode.tui.screens.resume import ResumeScreen
from dcode.tui.transcript import AssistantEntry, UserEntry
from dcode.tui.transcript.answer import INTERRUPTED_MARK
from dcode.tui.transcript.blocks import OlderMarker
from dcode.tui.transcript.view import RESUME_ENTRIES
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import one_session, running_app


async def test_resume_paints_the_transcript_and_continues(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    session_id = await one_session(server, workspace, dcode_home)
    async with running_app(
        server, workspace, dcode_home, reply("You said 42."), session_id=session_id
    ) as h:
        await h.until(lambda: h.prompts(), what="the resumed transcript")
        # The line saying so comes once the engine has the session, after the first paint.
        await h.until(lambda: f"Resumed session {session_id}" in h.text(), what="the resumed line")
        assert h.prompts() == ["what is in a.txt? remember 42"]
        assert h.answers() == ["The file says alpha."]
        [call] = h.calls()
        assert call.name == "read_file" and call.status is not None and "alpha" in call.output
        screen = h.text()
        assert (
            "remember 42" in screen
            and "The file says alpha." in screen
            and "✓ read_file a.txt" in screen
        )
        assert f"Resumed session {session_id}" in screen
        assert "Context 15% · 5.0k tokens" in screen  # the saved figures, before any new turn
        await h.send("what number?")
        await h.idle()
        assert h.app.runner is not None and h.app.runner.session_id == session_id
        history = h.server.transcript(len(h.server.requests) - 1)
        assert ("user", "what is in a.txt? remember 42") in history and history[-1] == (
            "user",
            "what number?",
        )


async def test_a_resumed_transcript_shows_what_the_live_one_showed(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """The resumed transcript is built from the replayed events: a rejected call, a kept
    partial answer and its mark look as they did live."""
    steps = (
        reply(tool_calls=[tool_call("execute", {"command": "make"})]),
        reply("word " * 300, chunk_size=3, chunk_delay=0.02),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("build it")
        await h.approval()
        await h.press("n")
        await h.until(lambda: len((h.answers() or [""])[-1]) > 20, what="some streamed text")
        await h.press("escape")
        await h.idle()
        assert h.app.runner is not None
        session_id, live, [live_call] = h.app.runner.session_id, h.answers()[-1], h.calls()
    async with running_app(server, workspace, dcode_home, session_id=session_id) as h:
        await h.until(lambda: h.prompts(), what="the resumed transcript")
        [call] = h.calls()
        assert (call.name, call.summary, call.preview) == (
            live_call.name,
            live_call.summary,
            live_call.preview,
        )
        assert call.status is ToolStatus.DENIED is live_call.status
        [answer] = h.entries(AssistantEntry)
        assert answer.interrupted and answer.text == live
        assert INTERRUPTED_MARK in h.text()


async def test_resume_picker_opens_a_session(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    session_id = await one_session(server, workspace, dcode_home)
    async with running_app(server, workspace, dcode_home, reply("fresh")) as h:
        await h.send("a new conversation")
        await h.idle()
        await h.send("/resume")
        await h.until(lambda: isinstance(h.app.screen, ResumeScreen), what="the picker")
        picker = h.app.screen
        assert session_id in [session.id for session in picker.shown]
        picker.dismiss(session_id)
        await h.until(
            lambda: h.prompts() == ["what is in a.txt? remember 42"], what="the old transcript"
        )
        assert h.app.runner is not None and h.app.runner.session_id == session_id


async def test_clear_starts_a_new_session(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("one"), reply("two")) as h:
        await h.send("first")
        await h.idle()
        assert h.app.runner is not None
        first = h.app.runner.session_id
        await h.send("/clear")
        await h.until(lambda: not h.prompts(), what="an empty transcript")
        await h.send("second")
        await h.idle()
        assert h.app.runner is not None and h.app.runner.session_id != first
        assert h.server.transcript(1)[-1] == ("user", "second")
        assert ("user", "first") not in h.server.transcript(1)
        assert open_store(h.settings).get(first) is not None


async def test_a_long_transcript_mounts_only_a_window(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, window=20) as h:
        transcript = h.app.transcript
        entries = []
        for n in range(150):
            entries.append(UserEntry(text=f"question {n}"))
            entries.append(AssistantEntry(text=f"answer **{n}**"))
        await transcript.load(entries)
        await h.pilot.pause()
        # What fills the screen, not the whole window (a screen not yet full mounts a batch more).
        assert transcript.mounted_count <= RESUME_ENTRIES + transcript.batch_size
        assert transcript.max_scroll_y > 0
        assert (
            len(transcript.children) == transcript.mounted_count + 2
        )  # and the header and the marker
        assert h.app.query_one(OlderMarker).has_class("-visible")
        assert "answer 149" in h.text()
        # Appending keeps the window bounded while following the bottom.
        for n in range(40):
            await transcript.add_user(f"more {n}")
        assert transcript.mounted_count <= transcript.window + transcript.batch_size
        # Scrolling to the top mounts the previous batch.
        before = transcript.mounted_count
        transcript.scroll_home(animate=False)
        await h.until(lambda: transcript.mounted_count > before, what="older entries")
        assert transcript.mounted_count == before + transcript.batch_size


async def test_a_resumed_screen_is_filled_and_the_marker_loads_more(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, size=(100, 80)) as h:
        transcript = h.app.transcript
        await transcript.load([UserEntry(text=f"question {n}") for n in range(200)])
        # Sixteen one-line entries leave an 80-row screen half empty: a batch more is mounted.
        await h.until(
            lambda: transcript.mounted_count == RESUME_ENTRIES + transcript.batch_size,
            5,
            "the screen to fill",
        )
        before = transcript.mounted_count
        marker = h.app.query_one(OlderMarker)
        marker.post_message(OlderMarker.Pressed())
        await h.until(lambda: transcript.mounted_count > before, 5, "the batch the marker asks for")
        assert transcript.mounted_count == before + transcript.batch_size


@dataclass
class HeldEngine:
    """Once ``hold()`` is called, ``Engine.open`` waits until ``released`` is set; ``open`` is
    the real one."""

    monkeypatch: pytest.MonkeyPatch
    released: asyncio.Event
    open: Callable[..., Awaitable[Engine]]

    def hold(self) -> None:
        async def held_open(*args: Any, **kwargs: Any) -> Engine:
            await self.released.wait()
            return await self.open(*args, **kwargs)

        self.monkeypatch.setattr(Engine, "open", held_open)


@pytest.fixture
def held_engine(monkeypatch: pytest.MonkeyPatch) -> HeldEngine:
    return HeldEngine(monkeypatch, asyncio.Event(), Engine.open)


async def test_a_resumed_transcript_is_painted_before_the_engine_is_ready(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, held_engine: HeldEngine
) -> None:
    session_id = await one_session(server, workspace, dcode_home)
    held_engine.hold()
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply("You said 42."),
        session_id=session_id,
        wait_ready=False,
    ) as h:
        await h.until(lambda: h.prompts(), what="the saved transcript")
        assert not h.app.ready  # still waiting for the engine
        assert h.prompts() == ["what is in a.txt? remember 42"] and h.answers() == [
            "The file says alpha."
        ]
        painted = list(h.app.transcript.children)
        held_engine.released.set()
        await h.ready()
        await h.until(lambda: f"Resumed session {session_id}" in h.text(), what="the resume notice")
        # The engine read the same checkpoint: what was painted stays, nothing is built twice.
        assert all(widget.parent is not None for widget in painted)
        await h.send("what number?")
        await h.idle()
        assert h.answers() == ["The file says alpha.", "You said 42."]


async def test_a_transcript_painted_early_is_repainted_if_the_session_moved_on(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, held_engine: HeldEngine
) -> None:
    session_id = await one_session(server, workspace, dcode_home)
    held_engine.hold()
    async with running_app(
        server, workspace, dcode_home, session_id=session_id, wait_ready=False
    ) as h:
        await h.until(lambda: h.prompts(), what="the saved transcript")
        # Meanwhile another dcode adds to the session.
        async with await held_engine.open(h.settings) as other:
            runner = other.runner(None, session_id=session_id)  # type: ignore[arg-type] - no turn runs
            await other.graph.aupdate_state(
                runner.config,
                {"messages": [HumanMessage(content="a note from elsewhere")]},
                as_node="model",
            )
        held_engine.released.set()
        await h.ready()
        await h.until(
            lambda: "a note from elsewhere" in h.prompts(), what="the session as it is now"
        )
        await h.until(lambda: f"Resumed session {session_id}" in h.text(), what="the resume notice")
        assert "· 5 messages" in h.text()  # the four of the turn, and the note
