"""Permission rules against the real ``dcode -p`` binary and the scripted model server: a
cloned repository whose ``.claude/settings.json`` allows ``Bash(*)`` changes nothing until it is
trusted; a deny rule holds under ``--approve all``; a model that writes ``.claude/settings.json``
is refused when nobody can approve it, in every mode; the json result lists the denials."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.model_server import ScriptedModelServer, reply, tool_call

DCODE = str(Path(sys.executable).with_name("dcode"))


@pytest.fixture
def user(tmp_path: Path, server: ScriptedModelServer) -> Path:
    home = tmp_path / "user" / ".dcode"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        f'model = "openai:test-model"\nbase_url = "{server.base_url}"\napi = "chat"\n'
    )
    return home


def dcode(args: list[str], workspace: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
    }
    return subprocess.run(
        [DCODE, *args], cwd=workspace, env=env, capture_output=True, text=True, timeout=90
    )


def tool_results(server: ScriptedModelServer, request: int = 1) -> list[str]:
    return [text for role, text in server.transcript(request) if role == "tool"]


def test_a_repository_allowing_bash_changes_nothing_until_trusted(
    server: ScriptedModelServer, user: Path, workspace: Path
) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(*)"]}})
    )
    touch = reply(tool_calls=[tool_call("execute", {"command": "touch pwned"})])
    server.script(touch, reply("refused"))
    result = dcode(["-p", "go"], workspace, user)
    assert result.returncode == 0, result.stderr
    assert not (workspace / "pwned").exists()
    assert tool_results(server)[0].startswith("denied")
    [warning] = result.stderr.splitlines()
    assert "Bash(*)" in warning and ".claude/settings.json" in warning and "dcode trust" in warning

    assert dcode(["trust"], workspace, user).returncode == 0
    server.script(touch, reply("ran"))
    result = dcode(["-p", "go"], workspace, user)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert (workspace / "pwned").exists()


# As one quoted value, and as Claude Code's documentation writes it: one word per rule, the
# prompt after them (it is not taken for a rule).
@pytest.mark.parametrize(
    "flags",
    [
        ["-p", "go", "--disallowedTools", "Read(./.env) Bash(cat:*)"],
        ["--disallowedTools", "Read(./.env)", "Bash(cat:*)", "-p", "go"],
        ["-p", "--disallowedTools", "Read(./.env)", "Bash(cat:*)", "go"],
    ],
    ids=["one value", "words then -p", "words then the prompt"],
)
def test_deny_holds_under_approve_all_and_is_listed(
    flags: list[str], server: ScriptedModelServer, user: Path, workspace: Path
) -> None:
    (workspace / ".env").write_text("TOKEN=secret-value")
    server.script(
        reply(
            tool_calls=[
                tool_call("read_file", {"file_path": ".env"}),
                tool_call("execute", {"command": "cat .env"}, call_id="call_2"),
            ]
        ),
        reply("done"),
    )
    args = [*flags, "--approve", "all", "--output-format", "json"]
    result = dcode(args, workspace, user)
    assert result.returncode == 0, result.stderr
    results = tool_results(server)
    assert len(results) == 2 and all(
        text.startswith("denied: denied by the rule") for text in results
    )
    assert not any("secret-value" in text for text in results)
    denials = json.loads(result.stdout)["permission_denials"]
    assert [(d["tool_name"], d["tool_input"]) for d in denials] == [
        ("read_file", {"file_path": ".env"}),
        ("execute", {"command": "cat .env"}),
    ]
    assert ("user", "go") in server.transcript(0)


WIDEN = json.dumps({"permissions": {"allow": ["Bash"]}})


@pytest.mark.parametrize(
    ("mode", "tool", "args"),
    [
        ("edits", "write_file", {"file_path": ".claude/settings.local.json", "content": WIDEN}),
        ("all", "write_file", {"file_path": ".claude/settings.local.json", "content": WIDEN}),
        ("all", "execute", {"command": f"echo '{WIDEN}' > .claude/settings.local.json"}),
    ],
    ids=["edits", "all", "all, from the shell"],
)
def test_the_model_cannot_write_its_own_settings(
    mode: str,
    tool: str,
    args: dict[str, str],
    server: ScriptedModelServer,
    user: Path,
    workspace: Path,
) -> None:
    (workspace / ".claude").mkdir()
    server.script(reply(tool_calls=[tool_call(tool, args)]), reply("tried"))
    result = dcode(
        [
            *("-p", "go", "--approve", mode, "--allowedTools", "Write Edit Bash"),
            *("--output-format", "json"),
        ],
        workspace,
        user,
    )
    assert result.returncode == 0, result.stderr
    assert not (workspace / ".claude" / "settings.local.json").exists()
    [refused] = tool_results(server)
    assert (
        "always needs approval; a run without a person cannot approve it" in refused
        and "--approve all" not in refused
    )
    assert [d["tool_name"] for d in json.loads(result.stdout)["permission_denials"]] == [tool]


def test_a_denied_file_is_not_attached_by_an_at_mention(
    server: ScriptedModelServer, user: Path, workspace: Path
) -> None:
    (workspace / ".env").write_text("TOKEN=secret-value\n")
    (workspace / "notes.txt").write_text("plain notes\n")
    (user / "config.toml").write_text(
        (user / "config.toml").read_text() + '\n[permissions]\ndeny = ["Read(./.env)"]\n'
    )
    server.script(reply("read"))
    result = dcode(["-p", "look at @.env and @notes.txt"], workspace, user)
    assert result.returncode == 0, result.stderr
    sent = json.dumps(server.requests[0].body)
    assert "secret-value" not in sent and "plain notes" in sent
    [line] = [text for text in result.stderr.splitlines() if "@.env" in text]
    assert "not attached: denied by the rule Read(./.env)" in line


def test_a_search_of_the_workspace_does_not_show_a_denied_file(
    server: ScriptedModelServer, user: Path, workspace: Path
) -> None:
    (workspace / ".env").write_text("TOKEN=secret-value\n")
    (workspace / "app.py").write_text("TOKEN = read_it()\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".env").write_text("TOKEN=another-secret\n")
    server.script(reply(tool_calls=[tool_call("grep", {"pattern": "TOKEN"})]), reply("searched"))
    result = dcode(["-p", "go", "--disallowedTools", "Read(.env)"], workspace, user)
    assert result.returncode == 0, result.stderr
    [found] = tool_results(server)
    assert "app.py:1:" in found and "secret" not in found
    assert "2 matching lines hidden" in found


def test_stream_json_s_result_lists_the_denials_too(
    server: ScriptedModelServer, user: Path, workspace: Path
) -> None:
    (workspace / ".env").write_text("TOKEN=secret-value")
    server.script(reply(tool_calls=[tool_call("read_file", {"file_path": ".env"})]), reply("done"))
    args = ["-p", "go", "--disallowedTools", "Read(./.env)", "--approve", "all"]
    result = dcode([*args, "--output-format", "stream-json"], workspace, user)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "result"
    [denial] = events[-1]["permission_denials"]
    assert denial["tool_name"] == "read_file" and "Read(./.env)" in denial["reason"]
    assert "secret-value" not in result.stdout
