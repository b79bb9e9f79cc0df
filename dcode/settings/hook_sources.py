"""Where hooks are read, in Claude Code's schema: the same files as the permission rules (the
project's ``.claude/settings.local.json`` and ``.claude/settings.json``, the user's
``~/.claude/settings.json``) and dcode's own ``[hooks]`` tables (the user's config and the
project's ``.dcode/config.toml``), which hold the same shape in TOML.

The shape is ``{EVENT: [{matcher, hooks: [{type: "command", command, timeout}]}]}``. A hook a
repository wrote runs commands on this machine, so the project's hooks wait until the user
trusts the project; the files that hold them are part of the trust digest
(``dcode.settings.trust``), so an edit to them asks again.

Standard library only: settings are read before anything heavy is imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dcode.settings.permission_sources import CLAUDE_PROJECT_FILES, claude_settings

HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
)
"""The events dcode fires; a settings file naming another of Claude's events is read without
error (Claude has more of them), and those hooks never run."""
DEFAULT_TIMEOUT_S = 60.0


class HooksError(ValueError):
    """A ``hooks`` table of the wrong shape; the message names the file."""


@dataclass(frozen=True, slots=True)
class HookCommand:
    """One command hook as a source spells it, and where it came from."""

    event: str
    matcher: str
    command: str
    timeout: float
    source: str
    """A file's path."""
    project: bool = False
    """Written by the repository: it runs only once the project is trusted."""


def table_hooks(table: object, source: str, *, project: bool) -> list[HookCommand]:
    """The hooks of a ``hooks`` table; anything of another shape is one line naming ``source``."""
    if table is None:
        return []
    if not isinstance(table, dict):
        raise HooksError(f"{source}: hooks must be a table of events, like {{PreToolUse = [...]}}")
    found: list[HookCommand] = []
    for event, groups in table.items():
        if not isinstance(groups, list):
            raise HooksError(f"{source}: hooks.{event} must be a list of {{matcher, hooks}}")
        for group in groups:
            found.extend(_group(event, group, source, project))
    return found


def _group(event: str, group: object, source: str, project: bool) -> list[HookCommand]:
    where = f"{source}: hooks.{event}"
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        raise HooksError(f"{where}: each entry must be {{matcher, hooks: [...]}}")
    matcher = group.get("matcher", "")
    if not isinstance(matcher, str):
        raise HooksError(f"{where}: matcher must be text (a tool name, or names split by |)")
    commands: list[HookCommand] = []
    for hook in group["hooks"]:
        if not isinstance(hook, dict) or hook.get("type", "command") != "command":
            raise HooksError(f'{where}: each hook must be {{type: "command", command: "..."}}')
        command, timeout = hook.get("command"), hook.get("timeout", DEFAULT_TIMEOUT_S)
        if not isinstance(command, str) or not command.strip():
            raise HooksError(f"{where}: a hook's command must be a non-empty command line")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise HooksError(f"{where}: a hook's timeout must be a positive number of seconds")
        commands.append(HookCommand(event, matcher, command, float(timeout), source, project))
    return commands


def json_hooks(path: Path, *, project: bool) -> list[HookCommand]:
    """The hooks of a Claude Code settings file; none when it does not exist."""
    try:
        data = claude_settings(path)
    except ValueError as exc:
        raise HooksError(f"{path}: cannot read its hooks: {exc}") from None
    if data is None:
        return []
    return table_hooks(data.get("hooks"), str(path), project=project)


def claude_hooks(workspace: Path, user_home: Path) -> list[HookCommand]:
    """Claude Code's files: the project's (local, then shared), then the user's."""
    found: list[HookCommand] = []
    for name in CLAUDE_PROJECT_FILES:
        found.extend(json_hooks(workspace / name, project=True))
    return found + json_hooks(user_home / ".claude" / "settings.json", project=False)


def gather_hooks(
    config_hooks: Iterable[HookCommand], workspace: Path, user_home: Path, *, trusted: bool
) -> tuple[list[HookCommand], list[HookCommand]]:
    """(the hooks that run, the project's hooks skipped until it is trusted): the project's
    Claude files and config first, then the user's."""
    config_hooks = list(config_hooks)
    claude = claude_hooks(workspace, user_home)
    ordered = [
        *(h for h in claude if h.project),
        *(h for h in config_hooks if h.project),
        *(h for h in claude if not h.project),
        *(h for h in config_hooks if not h.project),
    ]
    running = [h for h in ordered if trusted or not h.project]
    return running, [h for h in ordered if h.project and not trusted]


def skipped_line(skipped: Iterable[HookCommand]) -> str | None:
    """The one line a run says when the project's hooks wait for trust (None: none wait)."""
    count = len(list(skipped))
    if not count:
        return None
    noun = "hook" if count == 1 else "hooks"
    return (
        f"{count} project {noun} skipped: the project is not trusted (trust it with `dcode trust`)"
    )
