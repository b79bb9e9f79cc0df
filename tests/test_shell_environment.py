"""The shell and the backend's helpers run without the provider keys, unless passed by name."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.environment import ShellEnvironment
from dcode.settings.config import ProviderOverride
from dcode.settings.presets import PROVIDERS, provider_variables
from tests.support.model_server import reply, tool_call

DCODE = str(Path(sys.executable).with_name("dcode"))

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-0d1f9e",
    "DEEPSEEK_API_KEY": "sk-deepseek-77ab21",
    "OPENROUTER_API_KEY": "sk-openrouter-5c3d88",
    "ANTHROPIC_API_KEY": "sk-anthropic-9e0a14",
    "OPENAI_ORG_ID": "org-3b7c55",
    "OPENAI_BASE_URL": "https://user:pw-61f2@proxy.example/v1",
    "DCODE_API_KEY": "sk-dcode-a4e9d0",
    "DCODE_BASE_URL": "https://user:pw-c18e73@gateway.example/v1",
    "CORP_LLM_TOKEN": "corp-token-2f8b6a",  # the configured api_key_env below
    "openai_api_key": "sk-lower-case-88d1c0",
}
PASSED = {"DEPLOY_API_KEY": "deploy-key-e53a97"}  # looks like a secret, listed in pass_env
PLAIN = {"PLAIN_SETTING": "plain-value-4c0b2e", "DCODE_HOME": ""}  # DCODE_HOME is set per test


def test_the_rule() -> None:
    environment = ShellEnvironment.of(hidden={"CORP_LLM_TOKEN"}, passed={"DEPLOY_API_KEY"})
    for name in SECRETS:
        assert environment.hides(name), name
    for name in (
        "DEPLOY_API_KEY",
        "PATH",
        "HOME",
        "LANG",
        "TERM",
        "DCODE_HOME",
        "GITHUB_TOKEN",
        "PLAIN_SETTING",
    ):
        assert not environment.hides(name), name
    built = environment.build({"PATH": "/bin", "OPENAI_API_KEY": "k", "DEPLOY_API_KEY": "d"})
    assert built == {"PATH": "/bin", "DEPLOY_API_KEY": "d"}


def test_the_session_database_address_is_never_passed_even_when_listed() -> None:
    """It may hold the password of the server every session is kept in."""
    environment = ShellEnvironment.of(passed={"DCODE_DATABASE_URL", "dcode_database_url"})
    assert environment.hides("DCODE_DATABASE_URL")
    assert environment.hides("dcode_database_url")
    source = {"PATH": "/bin", "DCODE_DATABASE_URL": "postgresql://dcode:pw-5e1a@db/sessions"}
    assert environment.build(source) == {"PATH": "/bin"}


async def test_the_shell_does_not_see_the_session_database_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DCODE_DATABASE_URL", "postgresql://dcode:pw-93c4d7@db.example/sessions")
    environment = ShellEnvironment.of(passed={"DCODE_DATABASE_URL"})
    output = (await LocalBackend(tmp_path, environment=environment).execute("env")).output
    assert "pw-93c4d7" not in output and "DCODE_DATABASE_URL" not in output


async def test_the_shell_never_sees_what_a_dcode_client_sends_its_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token and API keys ``dcode --server`` sends (``dcode.server.client``) stay out of
    the shell even when listed in ``pass_env``."""
    secrets = {
        "DCODE_SERVER_TOKEN": "tok-51c9e2",
        "DCODE_SERVER_API_KEY": "key-7d20aa",
        "LANGSMITH_API_KEY": "lsv2-e81f03",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    for environment in (ShellEnvironment(), ShellEnvironment.of(passed=secrets)):
        output = (await LocalBackend(tmp_path, environment=environment).execute("env")).output
        for name, value in secrets.items():
            assert value not in output and name not in output


def test_provider_variables_cover_presets_and_configured_keys() -> None:
    names = provider_variables(
        {"corp": ProviderOverride(base_url="https://x", api_key_env="CORP_LLM_TOKEN")}
    )
    assert {preset.key_env for preset in PROVIDERS.values()} <= names
    assert {"CORP_LLM_TOKEN", "DCODE_API_KEY", "OPENAI_BASE_URL"} <= names


async def test_execute_does_not_see_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**SECRETS, **PASSED}.items():
        monkeypatch.setenv(name, value)
    environment = ShellEnvironment.of(hidden={"CORP_LLM_TOKEN"}, passed={"DEPLOY_API_KEY"})
    output = (await LocalBackend(tmp_path, environment=environment).execute("env")).output
    for value in SECRETS.values():
        assert value not in output
    assert f"DEPLOY_API_KEY={PASSED['DEPLOY_API_KEY']}" in output
    assert f"PATH={os.environ['PATH']}" in output


async def test_helpers_the_backend_runs_get_the_same_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git (here a stand-in that records its environment) is run by glob without ripgrep."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "git-env.txt"
    fake_git = bin_dir / "git"
    fake_git.write_text(f"#!/bin/sh\nenv > '{record}'\nexit 128\n")
    fake_git.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["OPENAI_API_KEY"])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("")
    backend = LocalBackend(workspace, use_ripgrep=False)
    assert (await backend.glob("*.py")).items == ("a.py",)
    seen = record.read_text()
    assert "PATH=" in seen and SECRETS["OPENAI_API_KEY"] not in seen


def test_a_headless_run_never_shows_or_saves_a_key(server, workspace: Path, tmp_path: Path) -> None:
    """The real binary in ``all`` mode; the model runs ``env``."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'pass_env = ["DEPLOY_API_KEY"]\n\n[providers.openai]\napi_key_env = "CORP_LLM_TOKEN"\n'
    )
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "env"})]),
        reply("listed the environment"),
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        **SECRETS,
        **PASSED,
        **PLAIN,
        "DCODE_HOME": str(home),
    }
    argv = [
        DCODE,
        "-p",
        "show me the environment",
        "-m",
        "openai:test-model",
        "--base-url",
        server.base_url,
    ]
    argv += ["--api", "chat", "--approve", "all", "--output-format", "json"]
    result = subprocess.run(
        argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == "listed the environment"
    shown = next(text for role, text in server.transcript(1) if role == "tool")
    saved = saved_text(home / "sessions.db")
    for where in (shown, saved):
        assert f"PLAIN_SETTING={PLAIN['PLAIN_SETTING']}" in where  # the dump is there
        assert f"DEPLOY_API_KEY={PASSED['DEPLOY_API_KEY']}" in where
        assert f"DCODE_HOME={home}" in where
        for name, value in SECRETS.items():
            assert value not in where, f"{name} reached the model or the session"


def saved_text(db: Path) -> str:
    """Every value in every table of the sessions database, decoded leniently: a key saved
    anywhere (a checkpoint, a pending write, the session list) is found."""
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        chunks = [
            value if isinstance(value, bytes) else str(value).encode()
            for table in tables
            for row in conn.execute(f'SELECT * FROM "{table}"')
            for value in row
        ]
    finally:
        conn.close()
    return b"\n".join(chunks).decode("utf-8", errors="replace")


def test_the_shell_cannot_read_the_key_from_dcodes_own_environ(
    server, workspace: Path, tmp_path: Path
) -> None:
    """``/proc/<pid>/environ`` shows the block a process was started with, whatever it changed
    since: the model's command reads dcode's (its parent's) and finds no key; dcode still sends it."""
    key = "sk-canary-3f9d1c0b7a"
    server.script(
        reply(
            tool_calls=[tool_call("execute", {"command": "tr '\\0' '\\n' < /proc/$PPID/environ"})]
        ),
        reply("read it"),
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": key,
        **PLAIN,
    }
    env["DEEPSEEK_API_KEY"] = SECRETS["DEEPSEEK_API_KEY"]
    argv = [
        DCODE,
        "-p",
        "read your parent's environment",
        "-m",
        "openai:test-model",
        "--base-url",
        server.base_url,
        "--api",
        "chat",
        "--approve",
        "all",
    ]
    result = subprocess.run(
        argv,
        cwd=workspace,
        env={**env, "DCODE_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    shown = next(text for role, text in server.transcript(1) if role == "tool")
    assert (
        f"PLAIN_SETTING={PLAIN['PLAIN_SETTING']}" in shown
    )  # it is dcode's environment that was read
    assert key not in shown and SECRETS["DEEPSEEK_API_KEY"] not in shown
    assert "OPENAI_API_KEY" not in shown
    headers = {name.lower(): value for name, value in server.requests[0].headers.items()}
    assert headers["authorization"] == f"Bearer {key}"


HIDING_PROBE = """
import ctypes, os, subprocess, sys
from dcode.processes.environ_block import hide
print(",".join(hide(lambda name: name.endswith("_API_KEY"))), flush=True)
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print(libc.getenv(b"PROBE_API_KEY").decode(), flush=True)
print(subprocess.run(["sh", "-c", "echo $PROBE_API_KEY"], capture_output=True, text=True).stdout.strip(), flush=True)
sys.stdin.readline()
"""


def test_hiding_keeps_the_value_for_dcode_and_what_it_starts() -> None:
    """Another process reading the block finds nothing; ``getenv`` and a child started without
    an explicit environment still get the value (it moved to memory of the C library's own)."""
    env = {"PATH": os.environ["PATH"], "PROBE_API_KEY": "probe-5e1a", "PLAIN_SETTING": "plain"}
    proc = subprocess.Popen(
        [sys.executable, "-c", HIDING_PROBE],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert [proc.stdout.readline().strip() for _ in range(3)] == [
            "PROBE_API_KEY",
            "probe-5e1a",
            "probe-5e1a",
        ]
        block = Path(f"/proc/{proc.pid}/environ").read_bytes()
        assert b"probe-5e1a" not in block and b"PROBE_API_KEY" not in block
        assert b"PLAIN_SETTING=plain" in block
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
