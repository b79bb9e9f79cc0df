"""Other clients' MCP files read as their users meant: Gemini CLI's ``url`` is SSE, Cline's
``streamableHttp`` and ``disabled``, Windsurf's ``serverUrl``, VS Code's ``servers``, a number in
``env``; then the same files through a real headless run, against real servers."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.mcp.config import (
    PROJECT_FILE,
    USER_FILE,
    ProjectEnv,
    Scope,
    Transport,
    load_sources,
    parse,
)
from dcode.mcp.plan import notes
from dcode.settings.config import ApprovalMode, McpSettings
from tests.support.mcp_fixtures import http_server, stdio_entry, write_config
from tests.support.model_server import reply, tool_call

GEMINI_SETTINGS = Path(".gemini") / "settings.json"


def read(
    path: Path, servers: dict, env: dict | None = None, scope: Scope = Scope.FLAG, **top: object
):
    return parse(path, scope, json.dumps({**top, "mcpServers": servers}).encode(), env or {})


def test_a_bare_url_is_sse_in_gemini_files_and_streamable_http_elsewhere(tmp_path: Path) -> None:
    servers = {
        "events": {"url": "http://127.0.0.1:9/sse"},
        "web": {"httpUrl": "http://127.0.0.1:9/mcp"},
        "typed": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
    }
    for path in (
        tmp_path / GEMINI_SETTINGS,
        tmp_path / ".qwen" / "settings.json",
        tmp_path / "ext" / "gemini-extension.json",
    ):
        file = read(path, servers)
        assert file.problems == ()
        assert {s.name: (s.transport, s.url) for s in file.servers} == {
            "events": (Transport.SSE, "http://127.0.0.1:9/sse"),
            "web": (Transport.HTTP, "http://127.0.0.1:9/mcp"),
            "typed": (Transport.HTTP, "http://127.0.0.1:9/mcp"),
        }
    for path in (
        tmp_path / "claude_desktop_config.json",
        tmp_path / ".cursor" / "mcp.json",
        tmp_path / "settings.json",
    ):
        assert read(path, servers).servers[0].transport is Transport.HTTP, path


def test_gemini_files_name_variables_bare_and_turn_servers_off_in_their_mcp_settings(
    tmp_path: Path,
) -> None:
    servers = {
        "gh": {"httpUrl": "https://api.test/mcp", "headers": {"Authorization": "Bearer $GH_TOKEN"}},
        "left": {"command": "srv", "env": {"T": "$SECRET"}},
        "kept": {"command": "srv", "args": ["${ROOT}/x", "$ROOT"]},
    }
    env = {"GH_TOKEN": "ghp-1", "ROOT": "/srv", "SECRET": "s"}
    file = read(tmp_path / GEMINI_SETTINGS, servers, env, mcp={"excluded": ["left"]})
    gh, left, kept = file.servers
    assert gh.headers == {"Authorization": "Bearer ghp-1"} and kept.args == ("/srv/x", "/srv")
    assert (
        left.disabled and not left.starts and left.env == {"T": "$SECRET"}
    )  # as written: it does not start
    assert [s.name for s in file.runnable] == ["gh", "kept"]
    only = read(tmp_path / GEMINI_SETTINGS, servers, env, mcp={"allowed": ["kept"]})
    assert [s.name for s in only.runnable] == ["kept"]
    # Only Gemini's files mean $VAR: elsewhere it is text (a shell-like argument stays as written).
    assert read(tmp_path / "mcp.json", servers, env).servers[2].args == ("/srv/x", "$ROOT")


@pytest.mark.parametrize(
    "spelling", ["streamableHttp", "streamable-http", "streamable_http", "STREAMABLE_HTTP", "http"]
)
def test_every_spelling_of_streamable_http(spelling: str, tmp_path: Path) -> None:
    (server,) = read(
        tmp_path / "cline_mcp_settings.json",
        {"web": {"type": spelling, "url": "https://x.test/mcp"}},
    ).servers
    assert (server.transport, server.url) == (Transport.HTTP, "https://x.test/mcp")


def test_windsurfs_server_url_and_clines_transport_type(tmp_path: Path) -> None:
    file = read(
        tmp_path / "mcp_config.json",
        {
            "wind": {"serverUrl": "https://w.test/mcp"},
            "events": {"transportType": "sse", "url": "https://c.test/sse"},
            "typed": {"type": "sse", "serverUrl": "https://s.test/sse"},
        },
    )
    assert file.problems == ()
    assert [(s.transport, s.url) for s in file.servers] == [
        (Transport.HTTP, "https://w.test/mcp"),
        (Transport.SSE, "https://c.test/sse"),
        (Transport.SSE, "https://s.test/sse"),
    ]


def test_a_disabled_server_does_not_start_and_reads_nothing(tmp_path: Path) -> None:
    file = read(
        tmp_path / "mcp.json",
        {
            "off": {"command": "srv", "env": {"T": "${TOKEN}"}, "disabled": True},
            "also": {"command": "srv", "enabled": False},
            "half": {
                "type": "http",
                "disabled": True,
            },  # half written: no problem line, it is off anyway
            "on": {"command": "srv", "disabled": False},
        },
        {"TOKEN": "t0k"},
    )
    assert file.problems == ()
    assert [s.name for s in file.runnable] == ["on"]
    off = file.servers[0]
    assert off.disabled and off.env == {"T": "${TOKEN}"} and off.variables == ("TOKEN",)
    assert next(n.text for n in notes(off, ProjectEnv())) == "disabled in the file: not started"


def test_a_disabled_project_server_leaves_the_users_own_running(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    write_config(home / USER_FILE, {"calc": {"command": "mine"}})
    write_config(
        workspace / PROJECT_FILE,
        {
            "calc": {"command": "theirs", "disabled": True},
            "dead": {"command": "x", "disabled": True},
        },
    )
    sources = load_sources(home, workspace, (), {})
    assert {name: s.command for name, s in sources.servers().items()} == {"calc": "mine"}
    listed = sources.servers(listing=True)
    assert (listed["calc"].command, listed["dead"].disabled) == ("mine", True)
    assert sources.project is not None and sources.project.runnable == ()  # nothing to approve


def test_a_number_or_a_boolean_in_env_is_its_text(tmp_path: Path) -> None:
    file = read(
        tmp_path / "mcp.json",
        {
            "srv": {
                "command": "srv",
                "env": {"PORT": 8080, "RATIO": 1.5, "WHOLE": 2.0, "DEBUG": True, "NAME": "x"},
            },
            "web": {"type": "http", "url": "https://x.test/mcp", "headers": {"X-Version": 2}},
            "bad": {"command": "srv", "env": {"T": None}},
        },
    )
    srv, web = file.servers
    assert dict(srv.env) == {
        "PORT": "8080",
        "RATIO": "1.5",
        "WHOLE": "2",
        "DEBUG": "true",
        "NAME": "x",
    }
    assert dict(web.headers) == {"X-Version": "2"}
    assert file.problems == (
        f"{tmp_path / 'mcp.json'}: server 'bad': env must be an object of strings",
    )


def test_vs_codes_servers_and_env_variables(tmp_path: Path) -> None:
    data = json.dumps(
        {
            "inputs": [],
            "servers": {
                "gh": {
                    "type": "http",
                    "url": "https://api.test/mcp",
                    "headers": {"Authorization": "Bearer ${env:GH_TOKEN}"},
                },
                "local": {
                    "type": "stdio",
                    "command": "srv",
                    "env": {"HOME_DIR": "${env:HOME_DIR:-/home}"},
                },
            },
        }
    ).encode()
    file = parse(tmp_path / ".vscode" / "mcp.json", Scope.FLAG, data, {"GH_TOKEN": "ghp-1"})
    gh, local = file.servers
    assert gh.headers == {"Authorization": "Bearer ghp-1"} and local.env == {"HOME_DIR": "/home"}


def test_a_project_file_names_env_variables_under_the_same_rules(tmp_path: Path) -> None:
    """``${env:KEY}`` is a variable like ``${KEY}``: a project's file may not read a provider's key that way either."""
    data = b'{"mcpServers": {"leak": {"type": "http", "url": "https://x.test/mcp", "headers": {"A": "${env:OPENAI_API_KEY}"}}}}'
    file = parse(
        tmp_path / PROJECT_FILE,
        Scope.PROJECT,
        data,
        {"OPENAI_API_KEY": "sk-canary"},
        ProjectEnv(keys=frozenset({"OPENAI_API_KEY"})),
    )
    (leak,) = file.servers
    assert (
        leak.refused == ("OPENAI_API_KEY",)
        and "sk-canary" not in repr(leak)
        and file.runnable == ()
    )


async def test_other_clients_files_through_a_headless_run(
    server, make_settings, tmp_path: Path
) -> None:
    """Gemini's ``url`` reaches a real SSE server and its ``httpUrl`` a streamable HTTP one; a
    disabled server is never started; a number in env reaches the server as text."""
    marker, seen = tmp_path / "started.txt", tmp_path / "environment.json"
    cline = write_config(
        tmp_path / "cline" / "cline_mcp_settings.json",
        {
            "off": {**stdio_entry("--marker", str(marker)), "disabled": True},
            "num": {**stdio_entry("--environment", str(seen)), "env": {"PORT": 8080}},
        },
    )
    with http_server(transport="sse") as sse_url, http_server() as http_url:
        gemini = write_config(
            tmp_path / GEMINI_SETTINGS, {"events": {"url": sse_url}, "web": {"httpUrl": http_url}}
        )
        server.script(
            reply(
                tool_calls=[
                    tool_call("mcp__events__add", {"a": 1, "b": 2}),
                    tool_call("mcp__web__add", {"a": 3, "b": 4}),
                ]
            ),
            reply("3 and 7"),
        )
        settings = make_settings(approve=ApprovalMode.ALL, mcp=McpSettings(configs=(gemini, cline)))
        out, err = io.StringIO(), io.StringIO()
        code = await run_headless(
            settings, HeadlessRequest("add", OutputFormat.JSON), out=out, err=err
        )
    assert code == 0, err.getvalue()
    assert "warning" not in err.getvalue()
    assert sorted(text for role, text in server.transcript(1) if role == "tool") == ["3", "7"]
    names = set(server.requests[0].tool_names)
    assert {"mcp__events__add", "mcp__web__add", "mcp__num__add"} <= names and not any(
        n.startswith("mcp__off__") for n in names
    )
    assert not marker.exists()
    assert json.loads(seen.read_text())["PORT"] == "8080"
