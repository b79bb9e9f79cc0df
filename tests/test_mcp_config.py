"""MCP configuration: the files users already have, ${VAR} expansion, one clear line for a bad
file, the flags, ``[mcp]`` in config.toml (which an untrusted project may not set)."""

from __future__ import annotations

from pathlib import Path

from dcode.config import load_settings
from dcode.mcp.config import PROJECT_FILE, Scope, Transport, expand, load_sources, parse
from dcode.mcp.names import allowed, assign_names, tool_name


def test_stdio_http_and_sse_servers_with_expansion(tmp_path: Path) -> None:
    data = b"""{"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server", "${ROOT:-/srv}"], "env": {"TOKEN": "${TOKEN}"}, "cwd": "/tmp"},
        "web": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
        "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
    }}"""
    file = parse(tmp_path / "mcp.json", Scope.USER, data, {"TOKEN": "t0k", "HOST": "example.test", "KEY": "k1"})
    assert file.problems == ()
    files, web, events = file.servers
    assert (files.transport, files.command, files.args, dict(files.env), files.cwd) == (Transport.STDIO, "npx", ("-y", "server", "/srv"), {"TOKEN": "t0k"}, "/tmp")
    assert (web.transport, web.url, dict(web.headers)) == (Transport.HTTP, "https://example.test/mcp", {"Authorization": "Bearer k1"})
    assert events.transport is Transport.SSE and files.target == "npx -y server /srv"


def test_expansion_of_missing_and_empty_variables() -> None:
    missing: list[str] = []
    assert expand("${A}-${B:-dflt}-${C:-}-${D}", {"A": "a", "D": ""}, missing) == "a-dflt--"
    assert missing == []  # D is set (to nothing); nothing names an unset variable without default
    assert expand("${NOPE}", {}, missing) == "" and missing == ["NOPE"]


def test_a_malformed_file_is_one_line_and_the_others_load(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "mcp.json").write_text('{"mcpServers": {"ok": {"command": "srv"}, "bad": {"type": "ftp", "url": "x"}, "nourl": {"type": "http"}}}')
    (workspace / PROJECT_FILE).write_text('{"mcpServers": {"p": {"command": "x",}}}')
    extra = tmp_path / "extra.json"
    extra.write_text('{"servers": {}}')
    sources = load_sources(home, workspace, (extra, tmp_path / "absent.json"), {})
    assert sources.problems == [
        f"{home / 'mcp.json'}: server 'bad': type 'ftp' is not one of stdio, http, sse",
        f"{home / 'mcp.json'}: server 'nourl': an http server needs a url",
        f"{workspace / PROJECT_FILE}: not valid JSON: Expecting property name enclosed in double quotes at line 1, column 38",
        f'{extra}: expected {{"mcpServers": {{NAME: {{...}}}}}}',
        f"{tmp_path / 'absent.json'}: no such file (--mcp-config)",
    ]
    assert list(sources.servers()) == ["ok"]


def test_later_files_win_a_name(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "mcp.json").write_text('{"mcpServers": {"a": {"command": "user"}}}')
    (workspace / PROJECT_FILE).write_text('{"mcpServers": {"a": {"command": "project"}}}')
    sources = load_sources(home, workspace, (), {})
    assert sources.servers()["a"].command == "project"
    assert sources.servers(include_project=False)["a"].command == "user"


def test_names_are_sanitised_and_collisions_resolved_deterministically() -> None:
    assert tool_name("my server", "get.file") == "mcp__my_server__get_file"
    long = tool_name("s" * 40, "t" * 40)
    assert len(long) == 64 and long.startswith("mcp__sss")
    pairs = [("a.b", "x"), ("a_b", "x"), ("calc", "add")]
    names = assign_names(pairs, {"read_file"})
    assert names[("a.b", "x")] == "mcp__a_b__x" and names[("a_b", "x")].startswith("mcp__a_b__x_") and len(set(names.values())) == 3
    assert assign_names(pairs, {"read_file"}) == names
    import re

    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names.values())


def test_the_allow_list() -> None:
    patterns = ("calc__add", "web__*")
    assert allowed(patterns, "mcp__calc__add") and allowed(patterns, "mcp__web__search")
    assert not allowed(patterns, "mcp__calc__mul") and not allowed(patterns, "mcp__webby__x") and not allowed(patterns, "execute")


def test_mcp_settings_from_the_user_config_and_flags(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "config.toml").write_text('[mcp]\nallow = ["calc__*"]\nconnect_timeout = 3\ncall_timeout = 30\n')
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)}, cli={"mcp_configs": [tmp_path / "x.json"], "no_mcp": True, "trust_project_mcp": True})
    mcp = settings.mcp
    assert (mcp.allow, mcp.connect_timeout, mcp.call_timeout) == (("calc__*",), 3.0, 30.0)
    assert (mcp.configs, mcp.enabled, mcp.trust_project) == ((tmp_path / "x.json",), False, True)


def test_an_untrusted_project_cannot_allow_mcp_tools(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (workspace / ".dcode").mkdir(parents=True)
    (workspace / ".dcode" / "config.toml").write_text('[mcp]\nallow = ["evil__*"]\n')
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert settings.mcp.allow == ()
    (ignored,) = settings.ignored
    assert ignored.key == "mcp.allow" and "runs MCP tools without asking" in ignored.reason


def test_an_unset_variable_is_named_and_the_server_still_loads(tmp_path: Path) -> None:
    data = b'{"mcpServers": {"web": {"type": "http", "url": "https://x.test/mcp", "headers": {"Authorization": "Bearer ${NOPE}"}}}}'
    file = parse(tmp_path / "mcp.json", Scope.USER, data, {})
    (server,) = file.servers
    assert dict(server.headers) == {"Authorization": "Bearer "}
    assert file.problems == (f"{tmp_path / 'mcp.json'}: server 'web': ${{NOPE}} is not set (used as empty)",)
