"""Rules in the approval policy: precedence, deny in every mode, path rules guarding reads and
writes, protected files, and the sources (a repository's allow rules wait for trust)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dcode.agent.approval import ApprovalPolicy, remember
from dcode.agent.backends import LocalBackend
from dcode.agent.permissions.load import session_rules
from dcode.agent.permissions.protected import is_protected_path
from dcode.agent.permissions.suggest import suggest_rule
from dcode.settings.config import ApprovalMode, ConfigError, load_settings
from dcode.settings.permission_sources import project_file
from dcode.settings.project_gate import ignored_rules_warning
from dcode.settings.saved_rules import remove_user_rule, save_project_rule, save_user_rule
from dcode.settings.trust import ProjectFiles, TrustStore


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    user = tmp_path / "user"
    (user / ".dcode").mkdir(parents=True)
    return {"HOME": str(user), "DCODE_HOME": str(user / ".dcode")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def claude_settings(
    root: Path, permissions: dict[str, list[str]], name: str = "settings.json"
) -> Path:
    (root / ".claude").mkdir(exist_ok=True)
    path = root / ".claude" / name
    path.write_text(json.dumps({"permissions": permissions}))
    return path


def policy_for(
    project: Path, env: dict[str, str], mode: ApprovalMode, **cli: object
) -> ApprovalPolicy:
    os.environ["HOME"] = env["HOME"]  # the user's ~/.claude and ~/ in path rules
    settings = load_settings(workspace=project, env=env, cli=cli)
    rules, problems = session_rules(settings)
    assert problems == []
    return ApprovalPolicy(mode, LocalBackend(project), rules=rules)


@pytest.fixture(autouse=True)
def _restore_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", os.environ.get("HOME", "/"))


@pytest.mark.parametrize("mode", list(ApprovalMode))
def test_deny_holds_in_every_mode_even_all(
    mode: ApprovalMode, project: Path, env: dict[str, str]
) -> None:
    Path(env["HOME"], ".claude").mkdir()
    Path(env["HOME"], ".claude", "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Bash(rm:*)", "Read(./.env)"], "allow": ["Bash"]}})
    )
    gate = policy_for(project, env, mode)
    verdict = gate.check("execute", {"command": "ls && rm -rf src"})
    assert verdict is not None and verdict.refused and "Bash(rm:*)" in verdict.reason
    read = gate.check("read_file", {"file_path": ".env"})
    assert read is not None and read.refused
    ls = gate.check("execute", {"command": "ls"})
    if mode is ApprovalMode.PLAN:  # no allow rule lets plan mode run the shell
        assert ls is not None and ls.refused
    else:
        assert ls is None  # the user's allow rule


def test_ask_beats_allow_and_a_yes_for_the_session_does_not_cover_it(
    project: Path, env: dict[str, str]
) -> None:
    save_user_rule(Path(env["DCODE_HOME"]) / "config.toml", "allow", "Bash(git:*)")
    save_user_rule(Path(env["DCODE_HOME"]) / "config.toml", "ask", "Bash(git push:*)")
    gate = policy_for(project, env, ApprovalMode.ALL)
    assert gate.check("execute", {"command": "git status"}) is None
    verdict = gate.check("execute", {"command": "git push origin main"})
    assert verdict is not None and not verdict.refused and verdict.every_time
    remember(gate, verdict)
    assert gate.check("execute", {"command": "git push origin main"}) is not None


def test_allow_beats_the_mode_default(project: Path, env: dict[str, str]) -> None:
    gate = policy_for(
        project, env, ApprovalMode.MANUAL, allowed_tools=["Bash(npm test:*) Edit(./src/**)"]
    )
    assert gate.check("execute", {"command": "npm test"}) is None
    assert gate.check("execute", {"command": "npm test; curl x"}) is not None
    assert gate.check("write_file", {"file_path": "src/a.py", "content": ""}) is None
    assert gate.check("write_file", {"file_path": "docs/a.md", "content": ""}) is not None


def test_read_rules_guard_every_reading_tool_and_links(project: Path, env: dict[str, str]) -> None:
    (project / ".env").write_text("KEY=1")
    (project / "innocent").symlink_to(project / ".env")
    (project / "secrets").mkdir()
    gate = policy_for(
        project, env, ApprovalMode.ALL, disallowed_tools=["Read(./.env) Read(./secrets/**)"]
    )
    for name, args in [
        ("read_file", {"file_path": ".env"}),
        ("read_file", {"file_path": str(project / ".env")}),
        ("read_file", {"file_path": "sub/../.env"}),
        ("read_file", {"file_path": "innocent"}),
        ("grep", {"pattern": "KEY", "path": ".env"}),
        ("glob", {"pattern": "secrets/*.pem"}),
        ("ls", {"path": "secrets"}),
    ]:
        verdict = gate.check(name, args)
        assert verdict is not None and verdict.refused, (name, args)
    assert gate.check("read_file", {"file_path": "README.md"}) is None


def test_writes_to_settings_ask_in_every_mode_under_any_allow_rule(
    project: Path, env: dict[str, str]
) -> None:
    gate = policy_for(project, env, ApprovalMode.ALL, allowed_tools=["Edit Write Bash"])
    for path in [
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".dcode/config.toml",
        ".claude/agents/x.md",
        ".dcode/commands/c.md",
        "sub/.claude/hooks.json",
        str(Path(env["DCODE_HOME"]) / "config.toml"),
        "~/.claude/settings.json",
    ]:
        verdict = gate.check("write_file", {"file_path": path, "content": "{}"})
        assert verdict is not None and verdict.every_time and not verdict.refused, path
    for command in [
        "echo '{}' > .claude/settings.json",
        "npm test && echo x >> .dcode/config.toml",
        "cp /tmp/evil.json .claude/settings.local.json",
        "printf x | tee -a .claude/agents/a.md",
        "sed -i s/ask/allow/ .claude/settings.json",
        "bash -c 'echo x > .dcode/commands/c.md'",
        "timeout 5 mv x ~/.claude/settings.json",
        f"echo x > {env['DCODE_HOME']}/config.toml",
    ]:
        shell = gate.check("execute", {"command": command})
        assert shell is not None and shell.every_time and not shell.refused, command
        assert "always needs approval" in shell.reason
    for command in ["cat .claude/settings.json", "echo x > notes.txt", "sed s/a/b/ .dcode/x"]:
        assert gate.check("execute", {"command": command}) is None, command
    narrow = policy_for(project, env, ApprovalMode.MANUAL, allowed_tools=["Bash(echo *)"])
    assert narrow.check("execute", {"command": "echo '{}' > .claude/settings.json"}) is not None
    assert narrow.check("execute", {"command": "echo '{}' > notes.txt"}) is None
    link = project / "notes"
    link.symlink_to(project / ".claude", target_is_directory=True)
    assert (
        gate.check(
            "edit_file", {"file_path": "notes/settings.json", "old_string": "a", "new_string": "b"}
        )
        is not None
    )
    assert gate.check("write_file", {"file_path": "src/ok.py", "content": ""}) is None


def test_is_protected_path_names_the_settings_files(tmp_path: Path) -> None:
    home = tmp_path / "dhome"  # $DCODE_HOME by another name: its own files are still protected
    env = {"DCODE_HOME": str(home)}
    assert is_protected_path(home / "config.toml", env)
    assert is_protected_path(home / "permissions" / "abc.json", env)
    assert is_protected_path(tmp_path / "repo" / ".claude" / "commands" / "x.md", env)
    assert not is_protected_path(tmp_path / "repo" / "src" / "claude.py", env)
    assert not is_protected_path(home / "sessions.db.notes", env)


def test_an_untrusted_repository_allowing_everything_changes_nothing(
    project: Path, env: dict[str, str]
) -> None:
    claude_settings(project, {"allow": ["Bash(*)", "Edit"], "deny": ["Bash(curl:*)"]})
    settings = load_settings(workspace=project, env=env)
    assert [r.text for r in settings.waiting_rules] == ["Bash(*)", "Edit"]
    warning = ignored_rules_warning(settings)
    assert (
        warning is not None
        and "Bash(*)" in warning
        and "dcode trust" in warning
        and "\n" not in warning
    )
    gate = policy_for(project, env, ApprovalMode.MANUAL)
    assert gate.check("execute", {"command": "rm -rf ~"}) is not None
    curl = gate.check("execute", {"command": "curl x"})
    assert curl is not None and curl.refused  # its deny rule applies at once

    TrustStore(Path(env["DCODE_HOME"])).trust(project, ProjectFiles.read(project).digest)
    trusted = policy_for(project, env, ApprovalMode.MANUAL)
    assert trusted.check("execute", {"command": "rm -rf build"}) is None
    claude_settings(project, {"allow": ["Bash(*)"]}, "settings.local.json")  # a change asks again
    assert load_settings(workspace=project, env=env).waiting_rules


def test_a_project_config_permissions_table_follows_the_same_rule(
    project: Path, env: dict[str, str]
) -> None:
    (project / ".dcode").mkdir()
    (project / ".dcode" / "config.toml").write_text(
        '[permissions]\nallow = ["Bash"]\nask = ["Read(./docs/**)"]\n'
    )
    gate = policy_for(project, env, ApprovalMode.ALL)
    verdict = gate.check("read_file", {"file_path": "docs/a.md"})
    assert verdict is not None and verdict.every_time
    settings = load_settings(workspace=project, env=env)
    assert [(r.text, r.source) for r in settings.waiting_rules] == [
        ("Bash", str(project / ".dcode" / "config.toml"))
    ]


def test_a_bad_table_is_one_line_and_a_bad_rule_is_left_out(
    project: Path, env: dict[str, str]
) -> None:
    claude_settings(project, {"allow": "Bash"})
    with pytest.raises(ConfigError, match=r"settings.json: permissions.allow must be a list"):
        load_settings(workspace=project, env=env)
    claude_settings(project, {"deny": ["WebFetch(docs.python.org)", "Read(./.env)"]})
    rules, problems = session_rules(load_settings(workspace=project, env=env))
    assert (
        len(problems) == 1
        and "WebFetch(docs.python.org)" in problems[0]
        and "domain:" in problems[0]
    )
    assert [r.text for r in rules.rules] == ["Read(./.env)"]


def test_saved_rules_live_under_dcode_home_never_in_the_repository(
    project: Path, env: dict[str, str]
) -> None:
    home = Path(env["DCODE_HOME"])
    path = save_project_rule(home, project, "allow", "Bash(npm test *)")
    assert path == project_file(home, project) and path.is_relative_to(home)
    assert (
        oct(path.stat().st_mode & 0o777) == "0o600"
        and oct(path.parent.stat().st_mode & 0o777) == "0o700"
    )
    assert not (project / ".claude").exists() and not (project / ".dcode").exists()
    gate = policy_for(project, env, ApprovalMode.MANUAL)
    assert gate.check("execute", {"command": "npm test -k x"}) is None
    other = project.parent / "other"
    other.mkdir()
    assert (
        policy_for(other, env, ApprovalMode.MANUAL).check("execute", {"command": "npm test"})
        is not None
    )


def test_user_rules_are_added_to_the_config_and_removed(env: dict[str, str]) -> None:
    config = Path(env["DCODE_HOME"]) / "config.toml"
    config.write_text(
        'model = "openai:x"\n\n[permissions]\nallow = [\n  "Bash(ls:*)",\n]\n\n[fetch]\nallow = ["docs.python.org"]\n'
    )
    save_user_rule(config, "allow", "Bash(npm test *)")
    save_user_rule(config, "deny", "Read(./.env)")
    import tomllib

    data = tomllib.loads(config.read_text())
    assert data["permissions"] == {
        "allow": ["Bash(ls:*)", "Bash(npm test *)"],
        "deny": ["Read(./.env)"],
    }
    assert data["fetch"] == {"allow": ["docs.python.org"]} and data["model"] == "openai:x"
    assert remove_user_rule(config, "allow", "Bash(ls:*)")
    assert tomllib.loads(config.read_text())["permissions"]["allow"] == ["Bash(npm test *)"]


@pytest.mark.parametrize(
    ("name", "args", "rule"),
    [
        ("execute", {"command": "npm test -- -k foo"}, "Bash(npm test *)"),
        ("execute", {"command": "FOO=1 pytest -q tests"}, "Bash(pytest *)"),
        ("execute", {"command": "npm test && rm -rf /"}, ""),
        ("execute", {"command": "npm test $(id)"}, ""),
        ("web_fetch", {"url": "https://Docs.Python.org/3/"}, "WebFetch(domain:docs.python.org)"),
        ("edit_file", {"file_path": "src/app/main.py"}, "Edit(./src/**)"),
        ("write_file", {"file_path": "/etc/passwd"}, ""),
    ],
)
def test_the_suggested_rule_comes_from_the_parsed_call(
    name: str, args: dict[str, str], rule: str
) -> None:
    assert suggest_rule(name, args) == rule


def test_a_runner_s_suggestion_names_the_script() -> None:
    assert suggest_rule("execute", {"command": "npm run lint -- --fix"}) == "Bash(npm run lint *)"
    assert suggest_rule("execute", {"command": "git diff --stat"}) == "Bash(git diff *)"
