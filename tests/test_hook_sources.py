"""Where hooks are read: Claude Code's settings files and dcode's ``[hooks]`` tables, in
Claude's schema; the project's wait for trust; a table of the wrong shape is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcode.agent.hooks.outcome import HookRun, fold_all
from dcode.agent.hooks.runner import matches
from dcode.settings.config import ConfigError, load_settings
from dcode.settings.trust import ProjectFiles, TrustStore


def env_for(tmp_path: Path, home: Path) -> dict[str, str]:
    return {"DCODE_HOME": str(home), "HOME": str(tmp_path / "user")}


def claude_settings(folder: Path, hooks: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"hooks": hooks}))


def test_every_source_in_order(tmp_path: Path, workspace: Path, home: Path) -> None:
    user_claude = tmp_path / "user" / ".claude"
    claude_settings(
        user_claude,
        {"Stop": [{"hooks": [{"type": "command", "command": "user-claude", "timeout": 5}]}]},
    )
    home.mkdir()
    (home / "config.toml").write_text(
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\n'
        'hooks = [{type = "command", command = "user-toml"}]\n'
    )
    claude_settings(
        workspace / ".claude",
        {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"command": "project-claude"}]}]},
    )
    TrustStore(home).trust(workspace, ProjectFiles.read(workspace).digest)
    settings = load_settings(workspace=workspace, env=env_for(tmp_path, home))
    assert [(h.event, h.matcher, h.command, h.timeout, h.project) for h in settings.hooks] == [
        ("PostToolUse", "Edit|Write", "project-claude", 60.0, True),
        ("Stop", "", "user-claude", 5.0, False),
        ("PreToolUse", "Bash", "user-toml", 60.0, False),
    ]
    assert settings.hooks[1].source == str(user_claude / "settings.json")


def test_an_untrusted_project_s_hooks_are_skipped_and_listed(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    claude_settings(workspace / ".claude", {"Stop": [{"hooks": [{"command": "touch x"}]}]})
    settings = load_settings(workspace=workspace, env=env_for(tmp_path, home))
    assert settings.hooks == ()
    assert [h.command for h in settings.skipped_hooks] == ["touch x"]
    listed = [(i.key, i.value) for i in settings.ignored]
    assert listed == [("hooks.Stop", "touch x")]  # the trust question names it


@pytest.mark.parametrize(
    ("hooks", "words"),
    [
        ("not a table", "hooks must be a table of events"),
        ({"Stop": {"command": "x"}}, "hooks.Stop must be a list"),
        ({"Stop": [{"command": "x"}]}, "each entry must be {matcher, hooks"),
        ({"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}, 'type: "command"'),
        ({"Stop": [{"hooks": [{"command": "x", "timeout": -1}]}]}, "positive number"),
        ({"Stop": [{"matcher": 3, "hooks": []}]}, "matcher must be text"),
    ],
)
def test_a_table_of_the_wrong_shape_is_one_line(
    tmp_path: Path, workspace: Path, home: Path, hooks: object, words: str
) -> None:
    claude_settings(tmp_path / "user" / ".claude", hooks)
    with pytest.raises(ConfigError, match=r"settings\.json") as caught:
        load_settings(workspace=workspace, env=env_for(tmp_path, home))
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_matchers_take_claude_names_regexes_and_globs() -> None:
    assert matches("", ["execute"]) and matches("*", ["execute"])
    assert matches("Bash", ["execute", "Bash"]) and not matches("Bash", ["read_file", "Read"])
    assert matches("Edit|Write", ["write_file", "Write"])
    assert matches("mcp__*", ["mcp__calc__add"]) and not matches("Notebook.*", ["Edit"])
    assert matches("([", ["(["]) and not matches("([", ["x"])  # not a regex: exact only


def test_several_hooks_fold_into_one_outcome() -> None:
    allow = '{"hookSpecificOutput": {"permissionDecision": "allow"}}'
    deny = (
        '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}'
    )
    outcome, said = fold_all(
        "PreToolUse",
        [
            HookRun("a", "s", 0, stdout=allow),
            HookRun("b", "s", 0, stdout=deny),
            HookRun("c", "s", 1, stderr="boom\nmore"),
            HookRun("d", "s", 0, stdout="[1, 2]"),
        ],
    )
    assert outcome.decision == "deny" and outcome.reason == "no"
    assert said == ["decided allow", "decided deny", "failed (exit 1)", "output ignored"]
    assert outcome.notices == [
        "PreToolUse hook `c` failed (exit 1): boom",
        "PreToolUse hook `d` printed JSON that is not an object; it was ignored",
    ]
    stopped, _ = fold_all(
        "Stop", [HookRun("e", "s", 0, stdout='{"continue": false, "stopReason": "enough"}')]
    )
    assert stopped.stop and stopped.stop_reason == "enough"


def test_the_listing_names_sources_results_and_events_dcode_does_not_fire(tmp_path: Path) -> None:
    from dcode.agent.hooks.listing import describe_hooks
    from dcode.agent.hooks.runner import Hooks
    from dcode.settings.hook_sources import HookCommand

    hooks = Hooks(
        (
            HookCommand("PreToolUse", "Bash", "check.sh", 60.0, "/u/.claude/settings.json"),
            HookCommand("PermissionRequest", "", "x", 5.0, "/u/.claude/settings.json"),
        ),
        workspace=tmp_path,
    )
    waiting = (HookCommand("Stop", "", "touch y", 60.0, "/p/.claude/settings.json", True),)
    assert describe_hooks(hooks, waiting) == [
        "hooks (2):",
        "  PreToolUse [Bash]: check.sh",
        "    from /u/.claude/settings.json · timeout 60 s · last: not run yet",
        "  PermissionRequest: x (dcode does not fire this event)",
        "    from /u/.claude/settings.json · timeout 5 s · last: not run yet",
        "1 project hook skipped: the project is not trusted (trust it with `dcode trust`):",
        "  Stop: touch y (from /p/.claude/settings.json)",
    ]


def test_a_settings_file_that_is_a_pipe_or_huge_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A hostile repository's ``.claude/settings.json`` as a named pipe with no writer would
    block a plain read for ever, and a huge one would be read whole: both are one line."""
    import os

    from dcode.settings.hook_sources import HooksError, json_hooks

    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    with pytest.raises(HooksError) as refused:
        json_hooks(pipe, project=True)
    assert str(refused.value).startswith(f"{pipe}: cannot read its hooks: ")
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: no disk used
    with pytest.raises(HooksError, match="larger than 1 MiB"):
        json_hooks(huge, project=True)
