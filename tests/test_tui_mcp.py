"""``/mcp``, the status bar's ``MCP 1/2`` and ``/context``'s rows for the MCP tools, with real
servers from the user's mcp.json."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dcode.mcp.state import LinkState
from dcode.settings.config import McpSettings
from dcode.tui.screens.context import ContextScreen
from dcode.tui.screens.mcp import McpScreen
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply, tool_call
from tests.test_tui_app_support import make_settings, running_app


async def test_the_mcp_screen_status_bar_and_context(
    server, workspace: Path, dcode_home: Path
) -> None:
    write_config(
        dcode_home / "mcp.json", {"calc": stdio_entry(), "dead": stdio_entry("--fail-start")}
    )
    async with running_app(server, workspace, dcode_home, reply("hello")) as h:
        await h.send("hi")
        await h.idle()
        assert "MCP server calc connected: 14 tools from this turn on" in h.text()
        assert "MCP server dead failed" in h.text()
        await h.until(lambda: "MCP 1/2" in h.text(), what="the status bar's count")

        await h.send("/context")
        await h.until(lambda: isinstance(h.app.screen, ContextScreen), what="/context")
        await h.until(lambda: "MCP tools: calc" in h.text(), what="the MCP row")
        assert "14 tools" in h.text() and "MCP servers" in h.text()
        await h.press("escape")

        await h.send("/mcp")
        await h.until(lambda: isinstance(h.app.screen, McpScreen), what="/mcp")
        await h.until(lambda: "mcp__calc__add" in h.text(), what="the tools")
        text = h.text()
        assert "calc  connected  stdio" in text and "dead  failed  stdio" in text
        assert "Add two integers." in text
        await h.press("down")
        await h.until(
            lambda: "cannot start: no configuration" in h.text(), what="the failed server's error"
        )
        await h.press("up")
        await h.press("d")
        assert h.app.engine is not None
        await h.until(
            lambda: h.app.engine.mcp.links["calc"].state is LinkState.DISABLED, what="calc disabled"
        )
        await h.until(lambda: "calc  disabled" in h.text(), what="the screen to follow")
        await h.press("r")
        await h.until(
            lambda: h.app.engine.mcp.links["calc"].state is LinkState.CONNECTED, what="calc again"
        )
        await h.press("escape")
        await h.until(lambda: "MCP 1/2" in h.text(), what="the count again")


async def test_a_calls_progress_shows_on_its_line(
    server, workspace: Path, dcode_home: Path
) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    settings = replace(
        make_settings(dcode_home, workspace, server), mcp=McpSettings(allow=("calc__*",))
    )
    steps = (reply(tool_calls=[tool_call("mcp__calc__steps", {"n": 2, "hold": 4})]), reply("done"))
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("count")
        await h.until(
            lambda: "100% · step 2 of 2" in h.text(), what="the progress on the call's line"
        )
        await h.idle()
        assert "100% · step 2 of 2" not in h.text()  # a finished call shows its result instead


async def test_esc_during_an_mcp_call_cancels_it_on_the_server(
    server, workspace: Path, dcode_home: Path
) -> None:
    """Esc in the TUI, not a task cancelled by hand: the 20 s operation stops on the server
    (its handler sees the cancellation) instead of running to its end."""
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    settings = replace(
        make_settings(dcode_home, workspace, server), mcp=McpSettings(allow=("calc__*",))
    )
    marker = workspace.parent / "cancelled.txt"
    wait = tool_call("mcp__calc__wait", {"seconds": 20, "marker": str(marker)})
    async with running_app(
        server, workspace, dcode_home, reply(tool_calls=[wait]), settings=settings
    ) as h:
        await h.send("wait a while")
        await h.until(lambda: any(c.running for c in h.calls()), 20, "the call to run")
        await h.pilot.pause(0.5)  # the request is on the server
        await h.press("escape")
        await h.until(marker.exists, 5, "the server's handler to be cancelled")
        assert marker.read_text() == "cancelled"
        await h.idle()
        assert h.app.engine is not None
        assert h.app.engine.mcp.links["calc"].state is LinkState.CONNECTED
