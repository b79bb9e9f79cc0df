"""``dcode mcp list|get|add|remove``: the files edited as ``claude mcp`` would, nothing started."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

DCODE = str(Path(sys.executable).with_name("dcode"))


def dcode(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(tmp_path / "home"),
        "SECRET": "hunter2",
    }
    return subprocess.run(
        [DCODE, "mcp", *args],
        cwd=tmp_path / "ws",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_add_list_get_remove(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    assert (
        dcode(
            tmp_path, "add", "calc", "python3", "--", "-m", "calc", "-e", "TOKEN=${SECRET}"
        ).returncode
        == 0
    )
    assert (
        dcode(
            tmp_path,
            "add",
            "-t",
            "http",
            "-H",
            "Authorization: Bearer ${SECRET}",
            "web",
            "https://mcp.test/mcp",
        ).returncode
        == 0
    )
    assert dcode(tmp_path, "add", "-s", "project", "proj", "node", "server.js").returncode == 0
    user = tmp_path / "home" / "mcp.json"
    assert stat.S_IMODE(user.stat().st_mode) == 0o600
    assert json.loads(user.read_text())["mcpServers"] == {
        "calc": {"command": "python3", "args": ["-m", "calc", "-e", "TOKEN=${SECRET}"]},
        "web": {
            "type": "http",
            "url": "https://mcp.test/mcp",
            "headers": {"Authorization": "Bearer ${SECRET}"},
        },
    }
    listed = dcode(tmp_path, "list").stdout.splitlines()
    assert listed == [
        "calc: python3 -m calc -e 'TOKEN=${SECRET}' (stdio, user)",
        "web: https://mcp.test/mcp (http, user)",
        "proj: node server.js (stdio, project) (not approved: starts after you approve .mcp.json in dcode)",
    ]
    got = dcode(tmp_path, "get", "web").stdout
    assert (
        "url: https://mcp.test/mcp" in got
        and "header: Authorization: …" in got
        and "hunter2" not in got
    )
    again = dcode(tmp_path, "add", "web", "x")
    assert again.returncode == 2 and "there is an MCP server 'web' already" in again.stderr
    assert dcode(tmp_path, "remove", "proj").stdout.startswith("Removed the MCP server proj from")
    assert json.loads((tmp_path / "ws" / ".mcp.json").read_text()) == {"mcpServers": {}}
    missing = dcode(tmp_path, "get", "proj")
    assert missing.returncode == 2 and "no MCP server 'proj'" in missing.stderr


def test_list_and_get_say_what_a_project_server_reads_and_whose_it_replaces(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text('[mcp]\nproject_env = ["GH_TOKEN"]\n')
    (tmp_path / "home" / "mcp.json").write_text('{"mcpServers": {"calc": {"command": "mine"}}}')
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "calc": {"command": "theirs"},
                    "gh": {"command": "gh-server", "env": {"T": "${GH_TOKEN}"}},
                    "leak": {
                        "type": "http",
                        "url": "https://x.test/mcp",
                        "headers": {"Authorization": "Bearer ${SECRET}"},
                    },
                }
            }
        )
    )
    listed = dcode(tmp_path, "list").stdout.splitlines()
    assert listed == [
        "calc: theirs (stdio, project) (replaces your own calc) (not approved: starts after you approve .mcp.json in dcode)",
        "gh: gh-server (stdio, project) (not approved: starts after you approve .mcp.json in dcode)",
        "leak: https://x.test/mcp (http, project) (not started: see the problem below)",
        (
            f"problem: {tmp_path / 'ws' / '.mcp.json'}: server 'leak': not started: ${{SECRET}} is not in [mcp] project_env in "
            f"{tmp_path / 'home' / 'config.toml'}; list it there to let project MCP files read it"
        ),
    ]
    gh = dcode(tmp_path, "get", "gh").stdout
    assert "note: reads ${GH_TOKEN} from your environment" in gh
    leak = dcode(tmp_path, "get", "leak").stdout
    assert (
        "note: reads ${SECRET} from your environment" in leak
        and "note: not started: ${SECRET} is not in [mcp] project_env" in leak
    )
    assert "hunter2" not in leak
    assert (
        "note: replaces your own calc: your [mcp] allow rules for calc do not apply to it"
        in dcode(tmp_path, "get", "calc").stdout
    )


def test_add_knows_a_url_and_list_and_get_read_mcp_config(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    assert dcode(tmp_path, "add", "web", "https://mcp.test/mcp").returncode == 0
    assert dcode(tmp_path, "add", "-t", "sse", "events", "http://127.0.0.1:9/sse").returncode == 0
    assert (
        dcode(tmp_path, "add", "local", "http-server", "--", "--port", "1").returncode == 0
    )  # a command that starts with "http"
    assert json.loads((tmp_path / "home" / "mcp.json").read_text())["mcpServers"] == {
        "web": {"type": "http", "url": "https://mcp.test/mcp"},
        "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "local": {"command": "http-server", "args": ["--port", "1"]},
    }
    gemini = tmp_path / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "old": {"url": "http://127.0.0.1:9/sse"},
                    "off": {"command": "srv", "disabled": True},
                }
            }
        )
    )
    mine = [
        "web: https://mcp.test/mcp (http, user)",
        "events: http://127.0.0.1:9/sse (sse, user)",
        "local: http-server --port 1 (stdio, user)",
    ]
    assert dcode(tmp_path, "list").stdout.splitlines() == mine
    listed = dcode(tmp_path, "list", "--mcp-config", str(gemini))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        *mine,
        "old: http://127.0.0.1:9/sse (sse, flag)",
        "off: srv (stdio, flag) (disabled in its file)",
    ]
    got = dcode(tmp_path, "get", "old", "--mcp-config", str(gemini)).stdout
    assert "type: sse" in got and f"file: {gemini}" in got
    missing = dcode(tmp_path, "list", "--mcp-config", str(tmp_path / "absent.json"))
    assert f"problem: {tmp_path / 'absent.json'}: no such file (--mcp-config)" in missing.stdout
