"""Shared harness for the TUI pilot tests: the real app, engine and SQLite against the scripted server.

No tests live here; the ``test_tui_app*`` modules import ``running_app`` and the helpers.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual import events
from textual.pilot import Pilot

from dcode.settings.config import ApprovalMode, Settings, WireApi
from dcode.settings.database import DATABASE_URL_ENV
from dcode.tui.app import DcodeApp
from dcode.tui.transcript import AssistantEntry, ToolCallEntry, ToolGroupEntry, UserEntry
from tests.support.model_server import ScriptedModelServer, Step, reply, tool_call

SIZE = (100, 34)
KEY_CHARACTERS = {"enter": "\r", "escape": "\x1b", "tab": "\t", "space": " "}


def screen_text(app: DcodeApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip).rstrip() for strip in strips)


def screen_cells(app: DcodeApp) -> list[list[tuple[str, str]]]:
    """Every row of the screen as (text, style) runs: what a terminal would show, colours
    and attributes included (not the mouse metadata, which names widgets)."""
    rows = []
    for strip in app.screen._compositor.render_strips():
        runs = [
            (segment.text, str(segment.style.clear_meta_and_links()) if segment.style else "")
            for segment in strip.simplify()
        ]
        merged: list[tuple[str, str]] = []
        for text, style in runs:
            if merged and merged[-1][1] == style:
                merged[-1] = (merged[-1][0] + text, style)
            else:
                merged.append((text, style))
        rows.append(merged)
    return rows


@dataclass
class Harness:
    app: DcodeApp
    pilot: Pilot[int]
    server: ScriptedModelServer
    workspace: Path
    settings: Settings

    async def until(
        self, condition: Callable[[], Any], timeout: float = 10.0, what: str = ""
    ) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what or condition}\n{screen_text(self.app)}"
                )
            await self.pilot.pause(0.02)

    async def ready(self) -> None:
        await self.until(lambda: self.app.ready, 30, "the engine")

    async def type(self, text: str) -> None:
        self.app.prompt_input.insert_text(text)
        await self.pilot.pause()

    async def send(self, text: str) -> None:
        await self.type(text)
        await self.press("enter")

    async def press(self, *keys: str) -> None:
        """Press keys without the pilot's wait-for-idle, which stalls for up to 2 s a key while
        a stream keeps the process busy."""
        for key in keys:
            character = KEY_CHARACTERS.get(key, key if len(key) == 1 else None)
            self.app.post_message(events.Key(key, character))
            await self.pilot.pause(0.01)
        await self.pilot.pause(0.02)

    async def idle(self, timeout: float = 15.0) -> None:
        await self.until(
            lambda: (
                not self.app.busy and not self.app.session.queue and not self.app.workers_in("turn")
            ),
            timeout,
            "the turn to end",
        )
        await self.pilot.pause()

    async def approval(self, timeout: float = 10.0) -> ToolCallEntry:
        await self.until(
            lambda: self.app.transcript.pending_approvals and self._approval_widget() is not None,
            timeout,
            "an approval",
        )
        await self.pilot.pause()
        return self.app.transcript.pending_approvals[0]

    def _approval_widget(self) -> Any:
        from dcode.tui.approval_widget import ApprovalWidget

        found = self.app.query(ApprovalWidget)
        return found.first() if found else None

    def text(self) -> str:
        return screen_text(self.app)

    def entries(self, kind: type) -> list[Any]:
        return [entry for entry in self.app.transcript.entries if isinstance(entry, kind)]

    def answers(self) -> list[str]:
        return [entry.text for entry in self.entries(AssistantEntry)]

    def prompts(self) -> list[str]:
        return [entry.text for entry in self.entries(UserEntry)]

    def calls(self) -> list[ToolCallEntry]:
        return [call for group in self.entries(ToolGroupEntry) for call in group.calls]

    def tool_results(self, request: int = -1) -> list[str]:
        index = request if request >= 0 else len(self.server.requests) + request
        return [text for role, text in self.server.transcript(index) if role == "tool"]


class GatedApp(DcodeApp):
    """Holds the engine back until ``open_gate()``, to test what happens before it is ready."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = asyncio.Event()

    def _after_first_paint(self) -> None:
        async def later() -> None:
            await self.gate.wait()
            DcodeApp._after_first_paint(self)

        self.run_worker(later(), group="gate")

    def open_gate(self) -> None:
        self.gate.set()


def make_settings(
    home: Path, workspace: Path, server: ScriptedModelServer, **changes: Any
) -> Settings:
    base = Settings(
        home=home,
        workspace=workspace,
        model="openai:test-model",
        base_url=server.base_url,
        api=WireApi.CHAT,
        approve=ApprovalMode.MANUAL,
        max_retries=0,
        # the test's store (``store_kind`` names a Postgres one here), else the home's file
        database_url=os.environ.get(DATABASE_URL_ENV) or None,
    )
    return replace(base, **changes)


@asynccontextmanager
async def running_app(
    server: ScriptedModelServer,
    workspace: Path,
    home: Path,
    *steps: Step,
    size: tuple[int, int] = SIZE,
    wait_ready: bool = True,
    settings: Settings | None = None,
    app_class: type[DcodeApp] = DcodeApp,
    notifications: bool = False,
    **app_kwargs: Any,
) -> AsyncIterator[Harness]:
    if steps:
        server.script(*steps)
    settings = settings or make_settings(home, workspace, server)
    app_kwargs.setdefault("animate", False)
    app_kwargs.setdefault("cwd_label", "~/ws")
    app_kwargs.setdefault("branch", "main")
    app = app_class(settings, **app_kwargs)
    async with app.run_test(size=size, notifications=notifications) as pilot:
        harness = Harness(app, pilot, server, workspace, settings)
        if wait_ready:
            await harness.ready()
        yield harness
        # Let a turn still in flight (or just answered, still writing its end) settle before the
        # screen goes away: it ends by writing to the transcript, as it does when a user quits.
        if app.runner is not None and app.runner.busy:
            app.runner.cancel()
        deadline = time.monotonic() + 3
        while _turn_in_flight(app) and time.monotonic() < deadline:
            await pilot.pause(0.02)


def _turn_in_flight(app: DcodeApp) -> bool:
    """A turn (or a command holding the session) has not ended yet: its worker still runs."""
    runner_busy = app.runner is not None and app.runner.busy
    working = any(
        not worker.is_finished for worker in app.workers if worker.group in ("turn", "command")
    )
    return app.busy or runner_busy or working


async def one_session(server: ScriptedModelServer, workspace: Path, home: Path) -> str:
    """A saved session to resume: one turn that read a.txt and was asked to remember 42."""
    (workspace / "a.txt").write_text("alpha\n")
    steps = (
        reply(tool_calls=[tool_call("read_file", {"file_path": "a.txt"})]),
        reply("The file says alpha.", usage=(5_000, 20)),
    )
    async with running_app(server, workspace, home, *steps) as h:
        await h.send("what is in a.txt? remember 42")
        await h.idle()
        assert h.app.runner is not None
        return h.app.runner.session_id
