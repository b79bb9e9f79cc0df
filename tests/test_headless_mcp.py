"""``dcode -p`` with MCP servers that fail: one stderr line per server that did not start, in
every output format, and ``stream-json`` opening with an ``init`` event that lists the tools
and each server's state (the real binary, real servers, the scripted model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dcode.agent.tools.spec import EXECUTE, READ_FILE
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply

DCODE = str(Path(sys.executable).with_name("dcode"))
HANG = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}


def run(server, workspace: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
    }
    command = [
        DCODE,
        "-p",
        "hi",
        "-m",
        "openai:test-model",
        "--base-url",
        server.base_url,
        "--api",
        "chat",
        *args,
    ]
    return subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=120
    )


def servers_config(home: Path) -> None:
    write_config(home / "mcp.json", {"dead": stdio_entry("--fail-start"), "calc": stdio_entry()})


def mcp_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "MCP server" in line]


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_each_server_that_did_not_start_is_one_line_on_stderr(
    output_format: str, server, workspace: Path, home: Path
) -> None:
    servers_config(home)
    server.script(reply("done"))
    result = run(server, workspace, home, "--output-format", output_format)
    assert result.returncode == 0, result.stderr
    (dead,) = mcp_lines(result.stderr)  # a server that connected is not news
    assert (
        dead.startswith("dcode: warning: MCP server dead failed: ")
        and "cannot start: no configuration" in dead
    )
    assert "mcp__calc__add" in server.requests[0].tool_names
    assert result.stdout.strip() == "done" if output_format == "text" else "done" in result.stdout


def test_a_server_too_slow_to_start_names_the_setting_that_waits_for_it(
    server, workspace: Path, home: Path
) -> None:
    write_config(home / "mcp.json", {"mute": HANG})
    (home / "config.toml").write_text("[mcp]\nconnect_timeout = 1\n")
    server.script(reply("done"))
    result = run(server, workspace, home)
    assert result.returncode == 0, result.stderr
    (line,) = mcp_lines(result.stderr)
    assert line.startswith(
        "dcode: warning: MCP server mute failed: did not start within 1 s ([mcp] connect_timeout)"
    )


def test_stream_json_opens_with_the_tools_and_each_servers_state(
    server, workspace: Path, home: Path
) -> None:
    servers_config(home)
    server.script(reply("done"))
    result = run(server, workspace, home, "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    init, started = events[0], events[1]
    assert init["type"] == "init" and started["type"] == "turn_started"
    assert init["session_id"] == started["session_id"] == events[-1]["session_id"]
    assert (init["model"], init["cwd"], init["approve"], init["agent"]) == (
        "openai:test-model",
        str(workspace),
        "edits",
        [],
    )
    assert sorted(init["tools"]) == sorted(
        server.requests[0].tool_names
    )  # what the model was given
    assert {READ_FILE.name, EXECUTE.name, "mcp__calc__add"} <= set(init["tools"])
    states = {s["name"]: (s["status"], s["error"]) for s in init["mcp_servers"]}
    assert list(states) == ["dead", "calc"]
    assert states["calc"] == ("connected", "")
    assert states["dead"][0] == "failed" and "cannot start: no configuration" in states["dead"][1]
    assert not any(
        e["type"] == "notice" and "MCP server" in e["message"] for e in events
    )  # said once, in init
    (dead,) = mcp_lines(result.stderr)  # and on stderr, as in the other formats
    assert dead.startswith("dcode: warning: MCP server dead failed: ")


def test_without_mcp_servers_init_lists_the_tools_and_stderr_stays_quiet(
    server, workspace: Path, home: Path
) -> None:
    server.script(reply("done"))
    result = run(server, workspace, home, "--output-format", "stream-json")
    assert result.returncode == 0 and result.stderr == ""
    init = json.loads(result.stdout.splitlines()[0])
    assert init["mcp_servers"] == [] and sorted(init["tools"]) == sorted(
        server.requests[0].tool_names
    )
