"""MCP end to end: the scripted model calls an MCP tool through the real ChatOpenAI client, on
both wires, and the result reaches the next request; project servers wait for an approval."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from dcode.agent.large_results import RESULTS_DIR
from dcode.agent.middleware.result_eviction import EVICT_CHARS
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.mcp.approvals import approve
from dcode.mcp.config import PROJECT_FILE, Scope, read_file
from dcode.settings.config import ApprovalMode, McpSettings
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply, tool_call


async def headless(settings, prompt: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings, HeadlessRequest(prompt=prompt, output_format=OutputFormat.JSON), out=out, err=err
    )
    return code, out.getvalue(), err.getvalue()


def tool_texts(server, index: int) -> list[str]:
    return [text for role, text in server.transcript(index) if role == "tool"]


async def test_the_model_calls_an_mcp_tool_and_gets_its_result(
    server, make_settings, dcode_home: Path, api: str
) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    server.script(
        reply(tool_calls=[tool_call("mcp__calc__add", {"a": 2, "b": 40})]), reply("2 + 40 = 42")
    )
    settings = make_settings(api, mcp=McpSettings(allow=("calc__add",)))
    code, out, err = await headless(settings, "add 2 and 40")
    assert code == 0, err
    assert json.loads(out)["result"] == "2 + 40 = 42"
    assert tool_texts(server, 1) == ["42"]
    first = server.requests[0]
    assert first.wire == api
    assert {"mcp__calc__add", "mcp__calc__picture", "mcp__calc__broken"} <= set(first.tool_names)
    schema = next(
        t for t in first.body["tools"] if (t.get("function") or t)["name"] == "mcp__calc__add"
    )
    parameters = (schema.get("function") or schema)["parameters"]
    assert (
        set(parameters["properties"]) == {"a", "b"}
        and parameters["properties"]["a"]["type"] == "integer"
    )
    system = server.system_text(0)
    assert (
        "<mcp_servers>" in system and "- calc: connected" in system and "mcp__calc__add" in system
    )
    assert server.system_text(1) == system  # byte-stable across the turn's requests


async def test_an_mcp_tool_asks_unless_allowed(server, make_settings, dcode_home: Path) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    server.script(
        reply(tool_calls=[tool_call("mcp__calc__add", {"a": 1, "b": 1})]), reply("denied")
    )
    code, _, err = await headless(make_settings(approve=ApprovalMode.EDITS), "add")
    assert code == 0, err
    (denied,) = tool_texts(server, 1)
    assert denied.startswith("denied: mcp__calc__add is not one of dcode's tools")


async def test_an_mcp_error_is_a_tool_error_and_the_turn_goes_on(
    server, make_settings, dcode_home: Path
) -> None:
    write_config(
        dcode_home / "mcp.json", {"calc": stdio_entry(), "dead": stdio_entry("--fail-start")}
    )
    server.script(reply(tool_calls=[tool_call("mcp__calc__broken", {})]), reply("it failed"))
    code, out, err = await headless(make_settings(approve=ApprovalMode.ALL), "try")
    assert code == 0, err
    assert json.loads(out)["result"] == "it failed"
    (text,) = tool_texts(server, 1)
    assert "the broken tool is broken" in text
    assert not any(name.startswith("mcp__dead__") for name in server.requests[0].tool_names)
    system = server.system_text(0)
    assert (
        "- dead: failed" in system
        and "<error>" in system
        and "cannot start: no configuration" in system
    )


async def test_an_unapproved_project_file_starts_nothing(
    server, make_settings, workspace: Path, dcode_home: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "started.txt"
    write_config(workspace / PROJECT_FILE, {"evil": stdio_entry("--marker", str(marker))})
    server.script(reply("no tools"))
    settings = make_settings(approve=ApprovalMode.ALL)
    code, _, err = await headless(settings, "hi")
    assert code == 0
    assert not marker.exists()
    assert not any(n.startswith("mcp__") for n in server.requests[0].tool_names)
    (warning,) = [line for line in err.splitlines() if "MCP" in line]
    assert (
        warning.startswith("dcode: warning: not starting the MCP servers of")
        and "(evil)" in warning
        and "--trust-project-mcp" in warning
    )

    file = read_file(workspace / PROJECT_FILE, Scope.PROJECT, {})
    assert file is not None
    approve(dcode_home, file)
    server.script(reply("tools now"))
    code, _, err = await headless(settings, "hi")
    assert code == 0, err
    assert marker.exists() and "mcp__evil__add" in server.requests[1].tool_names
    marker.unlink()

    write_config(
        workspace / PROJECT_FILE,
        {
            "evil": stdio_entry("--marker", str(marker)),
            "more": stdio_entry("--marker", str(marker)),
        },
    )
    server.script(reply("asked again"))
    code, _, err = await headless(settings, "hi")
    assert not marker.exists()
    assert "changed since you approved it" in err


async def test_trust_project_mcp_starts_the_project_servers(
    server, make_settings, workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "started.txt"
    write_config(workspace / PROJECT_FILE, {"proj": stdio_entry("--marker", str(marker))})
    server.script(reply("ok"))
    settings = make_settings(approve=ApprovalMode.ALL)
    code, _, err = await headless(replace(settings, mcp=McpSettings(trust_project=True)), "hi")
    assert code == 0, err
    assert marker.exists() and "mcp__proj__add" in server.requests[0].tool_names
    assert "MCP" not in err


async def test_mcp_config_adds_servers_and_no_mcp_starts_none(
    server, make_settings, dcode_home: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "started.txt"
    write_config(dcode_home / "mcp.json", {"mine": stdio_entry("--marker", str(marker))})
    extra = write_config(tmp_path / "extra.json", {"extra": stdio_entry()})
    settings = make_settings(approve=ApprovalMode.ALL)
    server.script(reply("both"))
    code, _, err = await headless(replace(settings, mcp=McpSettings(configs=(extra,))), "hi")
    assert code == 0, err
    assert {"mcp__mine__add", "mcp__extra__add"} <= set(server.requests[0].tool_names)
    marker.unlink()
    server.script(reply("none"))
    code, _, err = await headless(
        replace(settings, mcp=McpSettings(configs=(extra,), enabled=False)), "hi"
    )
    assert code == 0, err
    assert not any(n.startswith("mcp__") for n in server.requests[1].tool_names)
    assert "<mcp_servers>" not in server.system_text(1)
    assert not marker.exists()


async def test_a_malformed_file_is_one_warning_and_the_rest_loads(
    server, make_settings, dcode_home: Path, workspace: Path
) -> None:
    dcode_home.mkdir(parents=True, exist_ok=True)
    (dcode_home / "mcp.json").write_text('{"mcpServers": {"calc": ')
    write_config(workspace / "extra.json", {"calc": stdio_entry()})
    server.script(reply("ok"))
    settings = make_settings(
        approve=ApprovalMode.ALL, mcp=McpSettings(configs=(workspace / "extra.json",))
    )
    code, _, err = await headless(settings, "hi")
    assert code == 0, err
    assert err.splitlines() == [
        f"dcode: warning: {dcode_home / 'mcp.json'}: not valid JSON: Expecting value at line 1, column 25"
    ]
    assert "mcp__calc__add" in server.requests[0].tool_names


async def test_a_subagent_gets_the_sessions_mcp_tools(
    server, make_settings, dcode_home: Path
) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    job = "add 1 and 2 with the calculator"
    server.script(
        reply(
            tool_calls=[tool_call("task", {"description": job, "subagent_type": "general-purpose"})]
        ).answering("delegate"),
        reply(tool_calls=[tool_call("mcp__calc__add", {"a": 1, "b": 2})]).answering(job),
        reply("3").answering(job),
        reply("the subagent says 3").answering("delegate"),
    )
    code, out, err = await headless(make_settings(approve=ApprovalMode.ALL), "delegate")
    assert code == 0, err
    assert json.loads(out)["result"] == "the subagent says 3"
    assert "mcp__calc__add" in server.requests[1].tool_names
    assert ("tool", "3") in server.requests[2].transcript()


async def test_a_large_mcp_result_is_evicted_like_any_other(
    server, make_settings, dcode_home: Path
) -> None:
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    server.script(
        reply(tool_calls=[tool_call("mcp__calc__big", {"n": EVICT_CHARS + 1000})]), reply("long")
    )
    code, _, err = await headless(make_settings(approve=ApprovalMode.ALL), "big")
    assert code == 0, err
    (text,) = tool_texts(server, 1)
    assert len(text) < EVICT_CHARS and "0123456789" * 3 in text
    (saved,) = [p for p in (dcode_home / RESULTS_DIR).rglob("*") if p.is_file()]
    assert len(saved.read_text()) == EVICT_CHARS + 1000
