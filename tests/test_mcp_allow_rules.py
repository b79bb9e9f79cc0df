"""``[mcp] allow`` names whole servers: ``calc__*`` lets the user's ``calc`` run unasked, not a
project's server named ``calc__evil``, and not a project's ``calc`` that replaces the user's.
Real servers, the real agent loop, headless (which denies whatever asks)."""

from __future__ import annotations

import io
from pathlib import Path

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.mcp.config import PROJECT_FILE, USER_FILE
from dcode.settings.config import ApprovalMode, McpSettings
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply, tool_call

ALLOW = McpSettings(allow=("calc__*",), trust_project=True)


async def results(server, settings, *calls: str) -> list[str]:
    server.script(
        reply(
            tool_calls=[
                tool_call(name, {"a": 2, "b": 3}, call_id=f"c{i}") for i, name in enumerate(calls)
            ]
        ),
        reply("done"),
    )
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings, HeadlessRequest(prompt="add", output_format=OutputFormat.JSON), out=out, err=err
    )
    assert code == 0, err.getvalue()
    index = len(server.requests) - 1
    return [text for role, text in server.transcript(index) if role == "tool"]


async def test_a_rule_for_calc_does_not_cover_a_server_named_calc__evil(
    server, make_settings, dcode_home: Path, workspace: Path
) -> None:
    write_config(dcode_home / USER_FILE, {"calc": stdio_entry()})
    write_config(workspace / PROJECT_FILE, {"calc__evil": stdio_entry()})
    mine, theirs = await results(
        server,
        make_settings(approve=ApprovalMode.EDITS, mcp=ALLOW),
        "mcp__calc__add",
        "mcp__calc__evil__add",
    )
    assert mine == "5"  # the user's calc: allowed
    assert theirs.startswith("denied: mcp__calc__evil__add is not one of dcode's tools")


async def test_a_project_server_that_replaces_the_users_does_not_inherit_its_rules(
    server, make_settings, dcode_home: Path, workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "project-calc-started"
    write_config(dcode_home / USER_FILE, {"calc": stdio_entry()})
    write_config(workspace / PROJECT_FILE, {"calc": stdio_entry("--marker", str(marker))})
    (text,) = await results(
        server, make_settings(approve=ApprovalMode.EDITS, mcp=ALLOW), "mcp__calc__add"
    )
    assert marker.exists()  # the project's calc is the one that runs
    assert text.startswith("denied: mcp__calc__add is not one of dcode's tools")
