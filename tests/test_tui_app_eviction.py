"""A call whose output was too large for the model says so in its widget, and where the full
output is; a click opens that file. The same live and after a resume (real engine, SQLite and
scripted server)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual.widgets import TextArea

from dcode.agent.events import ToolStatus
from dcode.settings.config import ApprovalMode
from dcode.tui.screens.file_view import FileViewScreen
from dcode.tui.transcript import ToolCallEntry
from dcode.tui.transcript.tools import SavedOutputLine, ToolCallView
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_agent_result_eviction import PRINT_ROWS, ROWS
from tests.test_tui_app_support import Harness, make_settings, running_app


async def saved_line(h: Harness, call: ToolCallEntry) -> SavedOutputLine:
    await h.until(lambda: isinstance(call.view, ToolCallView), what="the call's widget")
    assert isinstance(call.view, ToolCallView)
    line = call.view.query_one(SavedOutputLine)
    await h.until(lambda: line.display, what="the saved-output line")
    line.scroll_visible(animate=False)
    await h.pilot.pause()
    return line


async def open_and_read(h: Harness, line: SavedOutputLine, close: str = "escape") -> str:
    """Click the line; the text the viewer shows, once it has read the file; then close it."""
    assert await h.pilot.click(line)
    await h.until(lambda: isinstance(h.app.screen, FileViewScreen), what="the file viewer")
    viewer = h.app.screen
    await h.until(lambda: viewer.query_one(TextArea).text, what="the file's text")
    text = viewer.query_one(TextArea).text
    await h.press(close)
    await h.until(lambda: not isinstance(h.app.screen, FileViewScreen), what="the viewer to close")
    return text


async def test_the_widget_says_where_the_output_is_and_opens_it(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    settings = replace(make_settings(dcode_home, workspace, server), approve=ApprovalMode.ALL)
    steps = (
        reply(tool_calls=[tool_call("execute", {"command": PRINT_ROWS})]),
        reply("Four thousand rows."),
    )
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("print the rows")
        await h.idle()
        [call] = h.calls()
        assert call.status is ToolStatus.OK and call.saved_to
        line = await saved_line(h, call)
        assert (
            "output cut for the model" in line.content.plain and call.saved_to in line.content.plain
        )  # type: ignore[union-attr]
        assert str(line.path) in h.tool_results()[0]  # the path the model was given
        shown = await open_and_read(h, line)
        assert shown == Path(call.saved_to).read_text() and f"row {ROWS - 1:06d}" in shown
        assert h.app.runner is not None
        session_id, path = h.app.runner.session_id, call.saved_to
    async with running_app(
        server, workspace, dcode_home, session_id=session_id, settings=settings
    ) as h:
        await h.until(lambda: h.calls(), what="the resumed transcript")
        [call] = h.calls()
        assert call.saved_to == path
        line = await saved_line(h, call)
        assert path in line.content.plain  # type: ignore[union-attr]
        assert await open_and_read(h, line, close="q") == Path(path).read_text()


async def test_a_call_sent_whole_has_no_such_line(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    settings = replace(make_settings(dcode_home, workspace, server), approve=ApprovalMode.ALL)
    steps = (reply(tool_calls=[tool_call("execute", {"command": "echo small"})]), reply("ok"))
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("run it")
        await h.idle()
        [call] = h.calls()
        await h.until(lambda: isinstance(call.view, ToolCallView), what="the call's widget")
        assert call.saved_to == "" and not call.view.query_one(SavedOutputLine).display  # type: ignore[union-attr]
