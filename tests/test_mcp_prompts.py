"""MCP prompts as slash commands: ``/mcp__server__prompt args`` fills the prompt's arguments in
order and sends what the server makes of them, in ``dcode -p`` and in the TUI; a missing
argument or an unknown prompt is one clear line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.mcp.prompts import PromptError
from dcode.settings.config import ApprovalMode
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply
from tests.test_mcp_servers import manager, servers
from tests.test_tui_app_support import running_app


async def test_arguments_fill_the_prompt_in_order(tmp_path: Path) -> None:
    mcp = manager(tmp_path)
    mcp.add(servers(tmp_path, {"calc": stdio_entry()}))
    try:
        assert (
            await mcp.expand_prompt('/mcp__calc__review "src/my app.py"')
            == "Review src/my app.py, looking for bugs."
        )
        assert (
            await mcp.expand_prompt("/mcp__calc__review a.py race conditions")
            == "Review a.py, looking for race conditions."
        )
        assert mcp.prompt_entries() == [
            ("mcp__calc__review", "Review a file. <path> [focus] (MCP calc)")
        ]
        assert mcp.snapshot().servers[0].prompts == ("mcp__calc__review",)
        with pytest.raises(PromptError) as missing:
            await mcp.expand_prompt("/mcp__calc__review")
        assert (
            str(missing.value) == "/mcp__calc__review needs path: /mcp__calc__review <path> [focus]"
        )
        with pytest.raises(PromptError) as unknown:
            await mcp.expand_prompt("/mcp__calc__nothing x")
        assert (
            str(unknown.value)
            == "unknown command /mcp__calc__nothing: no connected MCP server has that prompt (/mcp lists them)"
        )
    finally:
        await mcp.close()


async def test_headless_sends_the_servers_prompt(server, make_settings, dcode_home: Path) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    server.script(reply("looked"))
    out, err = io.StringIO(), io.StringIO()
    request = HeadlessRequest(
        prompt="/mcp__calc__review app.py style", output_format=OutputFormat.JSON
    )
    code = await run_headless(make_settings(approve=ApprovalMode.EDITS), request, out=out, err=err)
    assert code == 0, err.getvalue()
    assert json.loads(out.getvalue())["result"] == "looked"
    assert server.requests[0].body["messages"][-1]["content"] in (
        "Review app.py, looking for style.",
        [{"type": "text", "text": "Review app.py, looking for style."}],
    )


async def test_headless_says_what_is_missing(server, make_settings, dcode_home: Path) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        make_settings(), HeadlessRequest(prompt="/mcp__calc__review"), out=out, err=err
    )
    assert code == 2 and err.getvalue().endswith(
        "dcode: error: /mcp__calc__review needs path: /mcp__calc__review <path> [focus]\n"
    )
    assert server.requests == []


async def test_the_tui_runs_a_prompt_command(server, workspace: Path, dcode_home: Path) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    async with running_app(server, workspace, dcode_home, reply("reviewed")) as h:
        await h.send("/mcp__calc__review")
        await h.until(lambda: "needs path" in h.text(), what="the missing argument")
        assert server.requests == [] and "/mcp__calc__review" in h.app.prompt_input.text
        h.app.prompt_input.clear()
        await h.send("/mcp__calc__review lib.py")
        await h.until(lambda: "reviewed" in h.text(), what="the answer")
        assert "Review lib.py, looking for bugs." in h.text()
