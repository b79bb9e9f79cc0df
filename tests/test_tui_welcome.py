"""The first screen's header: the version, the model the session uses, the workspace and /help."""

from __future__ import annotations

from pathlib import Path

from dcode import __version__
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import running_app


def header(h) -> str:  # the Harness
    return str(h.app.query_one("#welcome").render())


async def test_the_first_screen_says_what_dcode_this_is_and_where_the_commands_are(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("hi")) as h:
        await h.pilot.pause()
        screen = h.text()
        assert f"dcode {__version__}" in screen
        assert (
            "model      openai:test-model" in screen
            and "workspace  ~/ws" in screen
            and "/help" in screen
        )
        welcome = h.app.query_one("#welcome")
        assert (
            welcome.region.bottom <= h.app.prompt_input.region.y
        )  # above the prompt, in the transcript


async def test_the_header_names_the_model_in_use_and_stays_for_a_new_session(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("hi")) as h:
        await h.send("/effort high")
        await h.until(
            lambda: "openai:test-model · high" in header(h), what="the effort beside the model"
        )
        await h.send("hello")
        await h.idle()
        await h.send("/clear")
        await h.until(lambda: "new session" in h.text(), what="the new session")
        assert "openai:test-model · high" in header(h) and f"dcode {__version__}" in h.text()
