"""Toasts never cover the status bar or the prompt: not on the main screen, not when the prompt
grows, not over a dialog."""

from __future__ import annotations

from pathlib import Path

from textual.geometry import Region

from dcode.tui.app import DcodeApp
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import Harness, running_app


def toasts(app: DcodeApp) -> list[Region]:
    return [toast.region for toast in app.screen.query("Toast") if toast.region.area]


def kept_clear(h: Harness) -> list[Region]:
    app = h.app
    return [app.prompt_input.region, app.status.region]


async def shown(h: Harness, message: str) -> list[Region]:
    h.app.notify(message, timeout=30)
    await h.until(lambda: toasts(h.app), what="the toast")
    await h.pilot.pause(0.1)
    return toasts(h.app)


def overlaps(toast: Region, others: list[Region]) -> list[Region]:
    return [other for other in others if toast.overlaps(other)]


async def test_a_toast_sits_above_the_prompt_and_the_status_bar(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, notifications=True) as h:
        [toast] = await shown(h, "something to say")
        assert not overlaps(toast, kept_clear(h))
        assert (
            toast.bottom <= h.app.transcript.region.bottom
        )  # right above them, over the transcript


async def test_a_toast_moves_up_as_the_prompt_grows(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, notifications=True) as h:
        await h.type("\n".join(f"line {n}" for n in range(8)))
        await h.pilot.pause(0.1)
        assert h.app.prompt_input.region.height >= 8
        [toast] = await shown(h, "a long prompt is being written")
        assert not overlaps(toast, kept_clear(h))


async def test_a_toast_over_a_dialog_leaves_the_status_bar_clear(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("hi"), notifications=True) as h:
        await h.send("/help")
        await h.until(lambda: h.app.screen is not h.app.screen_stack[0], what="the help dialog")
        [toast] = await shown(h, "said over the dialog")
        assert not overlaps(toast, kept_clear(h))
