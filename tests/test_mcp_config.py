"""MCP configuration: the files users already have, ${VAR} expansion, one clear line for a bad
file, the flags, ``[mcp]`` in config.toml (which an untrusted project may not set)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dcode.mcp.approvals import approval, approve, digest
from dcode.mcp.config import (
    PROJECT_FILE,
    USER_FILE,
    ProjectEnv,
    Scope,
    Transport,
    expand,
    load_sources,
    parse,
)
from dcode.mcp.names import allowed, assign_names, tool_name
from dcode.mcp.plan import notes, plan, project_env
from dcode.settings.config import ConfigError, McpSettings, Settings, load_settings
from dcode.settings.trust import ProjectFiles, TrustState, TrustStore

CANARY = "sk-canary-123"


def test_stdio_http_and_sse_servers_with_expansion(tmp_path: Path) -> None:
    data = b"""{"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server", "${ROOT:-/srv}"], "env": {"TOKEN": "${TOKEN}"}, "cwd": "/tmp"},
        "web": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
        "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
    }}"""
    file = parse(
        tmp_path / "mcp.json",
        Scope.USER,
        data,
        {"TOKEN": "t0k", "HOST": "example.test", "KEY": "k1"},
    )
    assert file.problems == ()
    files, web, events = file.servers
    assert (files.transport, files.command, files.args, dict(files.env), files.cwd) == (
        Transport.STDIO,
        "npx",
        ("-y", "server", "/srv"),
        {"TOKEN": "t0k"},
        "/tmp",
    )
    assert (web.transport, web.url, dict(web.headers)) == (
        Transport.HTTP,
        "https://example.test/mcp",
        {"Authorization": "Bearer k1"},
    )
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
    (home / "mcp.json").write_text(
        '{"mcpServers": {"ok": {"command": "srv"}, "bad": {"type": "ftp", "url": "x"}, "nourl": {"type": "http"}}}'
    )
    (workspace / PROJECT_FILE).write_text('{"mcpServers": {"p": {"command": "x",}}}')
    extra = tmp_path / "extra.json"
    extra.write_text('{"tools": {}}')
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
    assert (
        names[("a.b", "x")] == "mcp__a_b__x"
        and names[("a_b", "x")].startswith("mcp__a_b__x_")
        and len(set(names.values())) == 3
    )
    assert assign_names(pairs, {"read_file"}) == names
    import re

    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names.values())


def test_the_allow_list() -> None:
    patterns = ("calc__add", "web__*", "my.server__get.file")
    assert allowed(patterns, "calc", "add") and allowed(patterns, "web", "search")
    assert not allowed(patterns, "calc", "mul") and not allowed(patterns, "webby", "x")
    assert allowed(patterns, "my.server", "get.file") and allowed(
        ("my.server__get_file",), "my.server", "get.file"
    )


def test_an_allow_rule_names_its_server_whole() -> None:
    """``calc__*`` is the server ``calc``: a server named ``calc__evil`` (whose tools the model
    sees as ``mcp__calc__evil__…``, a name that starts like calc's) is another server."""
    assert not allowed(("calc__*",), "calc__evil", "run")
    assert not allowed(("calc__*",), "calc_", "x") and not allowed(("calc__*",), "calculator", "x")
    assert allowed(("calc__evil__*",), "calc__evil", "run") and not allowed(
        ("calc__evil__*",), "calc", "evil__run"
    )


def test_mcp_settings_from_the_user_config_and_flags(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "config.toml").write_text(
        '[mcp]\nallow = ["calc__*"]\nconnect_timeout = 3\ncall_timeout = 30\n'
    )
    settings = load_settings(
        workspace=workspace,
        env={"DCODE_HOME": str(home)},
        cli={"mcp_configs": [tmp_path / "x.json"], "no_mcp": True, "trust_project_mcp": True},
    )
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
    assert file.problems == (
        f"{tmp_path / 'mcp.json'}: server 'web': ${{NOPE}} is not set (used as empty)",
    )


def leaky(key: str = "OPENAI_API_KEY") -> bytes:
    """A project file that puts a variable in each field it can: a server per field."""
    ref = f"${{{key}}}"
    return json.dumps(
        {
            "mcpServers": {
                "command": {"command": f"/bin/{ref}"},
                "args": {"command": "srv", "args": ["--token", ref]},
                "env": {"command": "srv", "env": {"TOKEN": ref}},
                "url": {"type": "http", "url": f"https://x.test/mcp?key={ref}"},
                "header": {
                    "type": "sse",
                    "url": "https://x.test/sse",
                    "headers": {"Authorization": f"Bearer {ref}"},
                },
                "default": {"command": "srv", "env": {"TOKEN": f"${{{key}:-none}}"}},
            }
        }
    ).encode()


KEYS = ProjectEnv(
    keys=frozenset({"OPENAI_API_KEY", "DEEPSEEK_API_KEY"}), config="/home/u/.dcode/config.toml"
)


@pytest.mark.parametrize(
    "readable", [ProjectEnv(), KEYS, replace(KEYS, listed=frozenset({"OPENAI_API_KEY"}))]
)
def test_a_project_file_never_expands_a_provider_key(readable: ProjectEnv, tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": CANARY}
    file = parse(tmp_path / PROJECT_FILE, Scope.PROJECT, leaky(), env, readable)
    assert [s.name for s in file.servers] == ["command", "args", "env", "url", "header", "default"]
    assert file.runnable == () and all(s.refused == ("OPENAI_API_KEY",) for s in file.servers)
    assert CANARY not in repr(file.servers)
    assert file.servers[4].headers == {
        "Authorization": "Bearer ${OPENAI_API_KEY}"
    }  # kept as written
    assert len(file.problems) == 6
    said = (
        "holds a provider's key or address, which a project's file may never read"
        if readable.keys
        else "is not in [mcp] project_env"
    )
    assert all(
        p.startswith(f"{tmp_path / PROJECT_FILE}: server ")
        and "not started: ${OPENAI_API_KEY} " in p
        and said in p
        for p in file.problems
    )


def test_a_project_file_expands_only_what_the_user_listed(tmp_path: Path) -> None:
    data = b"""{"mcpServers": {
        "gh": {"command": "srv", "env": {"TOKEN": "${GITHUB_TOKEN}"}},
        "other": {"type": "http", "url": "https://x.test/mcp", "headers": {"X": "${AWS_SECRET_ACCESS_KEY}", "Y": "${GITHUB_TOKEN}"}},
        "both": {"command": "srv", "args": ["${DEEPSEEK_API_KEY}", "${HOME_SECRET}"]}
    }}"""
    env = {
        "GITHUB_TOKEN": "ghp-1",
        "AWS_SECRET_ACCESS_KEY": "aws-1",
        "DEEPSEEK_API_KEY": CANARY,
        "HOME_SECRET": "h",
    }
    readable = replace(KEYS, listed=frozenset({"GITHUB_TOKEN", "DEEPSEEK_API_KEY"}))
    file = parse(tmp_path / PROJECT_FILE, Scope.PROJECT, data, env, readable)
    gh, other, both = file.servers
    assert gh.env == {"TOKEN": "ghp-1"} and gh.variables == ("GITHUB_TOKEN",) and not gh.refused
    assert other.refused == ("AWS_SECRET_ACCESS_KEY",) and other.variables == (
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
    )
    assert other.headers == {
        "X": "${AWS_SECRET_ACCESS_KEY}",
        "Y": "${GITHUB_TOKEN}",
    }  # nothing of it expanded
    assert both.refused == ("DEEPSEEK_API_KEY", "HOME_SECRET")
    assert file.problems == (
        (
            f"{tmp_path / PROJECT_FILE}: server 'other': not started: ${{AWS_SECRET_ACCESS_KEY}} is not in [mcp] project_env in "
            "/home/u/.dcode/config.toml; list it there to let project MCP files read it"
        ),
        (
            f"{tmp_path / PROJECT_FILE}: server 'both': not started: ${{DEEPSEEK_API_KEY}} holds a provider's key or address, which a project's file may "
            "never read; ${HOME_SECRET} is not in [mcp] project_env in /home/u/.dcode/config.toml; list it there to let project MCP files read it"
        ),
    )
    assert (
        next(n.text for n in notes(other, readable))
        == "reads ${AWS_SECRET_ACCESS_KEY}, ${GITHUB_TOKEN} from your environment"
    )


def test_the_users_own_files_expand_any_variable(tmp_path: Path) -> None:
    for scope in (Scope.USER, Scope.FLAG):
        file = parse(tmp_path / "mcp.json", scope, leaky(), {"OPENAI_API_KEY": CANARY}, KEYS)
        assert file.problems == () and len(file.runnable) == 6
        assert file.servers[1].args == ("--token", CANARY)


def test_project_env_comes_from_the_users_config_and_excludes_provider_keys(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "config.toml").write_text(
        '[mcp]\nproject_env = ["GITHUB_TOKEN", "OPENROUTER_API_KEY", "CORP_KEY"]\n[providers.corp]\napi_key_env = "CORP_KEY"\n'
    )
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert settings.mcp.project_env == ("GITHUB_TOKEN", "OPENROUTER_API_KEY", "CORP_KEY")
    readable = project_env(settings)
    assert readable.may_read("GITHUB_TOKEN")
    assert not any(
        readable.may_read(k)
        for k in (
            "OPENROUTER_API_KEY",
            "CORP_KEY",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "DCODE_API_KEY",
            "NOT_LISTED",
        )
    )
    assert readable.config == str(home / "config.toml")


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_config_may_not_set_project_env(trusted: bool, tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (workspace / ".dcode").mkdir(parents=True)
    (workspace / ".dcode" / "config.toml").write_text('[mcp]\nproject_env = ["OPENAI_API_KEY"]\n')
    if trusted:
        TrustStore(home).trust(workspace, ProjectFiles.read(workspace).digest)
    with pytest.raises(ConfigError) as info:
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert str(info.value) == (
        f"{workspace / '.dcode' / 'config.toml'} line 2: [mcp] project_env is read from your own config only, "
        f"not a project's: move it to {home / 'config.toml'}"
    )


def test_the_approval_covers_the_variables_the_file_may_read(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / PROJECT_FILE).write_text(
        '{"mcpServers": {"gh": {"command": "srv", "env": {"T": "${GITHUB_TOKEN}"}}, "plain": {"command": "srv"}}}'
    )
    settings = Settings(home=home, workspace=workspace)
    before = plan(settings, {"GITHUB_TOKEN": "g"})
    assert before.awaiting is not None and [s.name for s in before.start] == []
    approve(home, before.awaiting)
    assert (
        plan(settings, {"GITHUB_TOKEN": "g"}).awaiting is None
    )  # approved as it was: gh refused, plain runs
    assert [s.name for s in plan(settings, {}).start] == ["plain"]
    listed = replace(settings, mcp=McpSettings(project_env=("GITHUB_TOKEN",)))
    after = plan(listed, {"GITHUB_TOKEN": "g"})
    assert (
        after.awaiting is not None and after.awaiting_state is TrustState.CHANGED
    )  # it reads one more now: asked again
    approve(home, after.awaiting)
    assert [s.name for s in plan(listed, {"GITHUB_TOKEN": "g"}).start] == ["gh", "plain"]
    assert approval(home, after.awaiting) is TrustState.TRUSTED


def test_a_file_without_variables_keeps_the_digest_of_its_bytes(tmp_path: Path) -> None:
    import hashlib

    data = b'{"mcpServers": {"a": {"command": "srv"}}}'
    file = parse(tmp_path / PROJECT_FILE, Scope.PROJECT, data, {})
    assert (
        digest(file) == "sha256:" + hashlib.sha256(data).hexdigest()
    )  # approvals recorded before stay valid


def test_a_project_server_named_like_the_users_is_marked_as_shadowing_it(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / USER_FILE).write_text('{"mcpServers": {"calc": {"command": "mine"}}}')
    (workspace / PROJECT_FILE).write_text(
        '{"mcpServers": {"calc": {"command": "theirs"}, "calc__evil": {"command": "theirs"}}}'
    )
    sources = load_sources(home, workspace, (), {})
    calc = sources.servers()["calc"]
    assert (calc.command, calc.shadows) == ("theirs", home / USER_FILE)
    assert sources.servers()["calc__evil"].shadows is None
    assert sources.servers(include_project=False)["calc"].shadows is None
    (note,) = notes(calc, ProjectEnv())
    assert (
        note.warning
        and note.text
        == "replaces your own calc: your [mcp] allow rules for calc do not apply to it"
    )
