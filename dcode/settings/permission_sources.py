"""Where permission rules are read, in Claude Code's order (highest first): the command line
(``--allowedTools``, ``--disallowedTools``), the project's ``.claude/settings.local.json`` and
``.claude/settings.json``, the user's ``~/.claude/settings.json``; and dcode's own
``[permissions]`` tables (the project's ``.dcode/config.toml``, the user's config, and the rules
the user saved for one project under ``$DCODE_HOME``).

Rules from every source merge; which one decides is the effect (deny, ask, allow), not the
source. A repository's ``deny`` and ``ask`` rules apply at once; its ``allow`` rules wait until
the user trusts the project (the files are part of the trust digest, ``dcode.settings.trust``).

Standard library only: settings are read before anything heavy is imported. Rules stay text
here; they are parsed when a session's policy is built.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from dcode.regular_files import read_config

EFFECT_NAMES: tuple[str, ...] = ("deny", "ask", "allow")
CLAUDE_PROJECT_FILES: tuple[str, ...] = (".claude/settings.local.json", ".claude/settings.json")
"""A project's Claude Code settings, highest first (both join the trust digest)."""
T = TypeVar("T")
COMMAND_LINE = "command line"
FOLDER = "permissions"
"""Under ``$DCODE_HOME``: the rules saved for one project (``dcode.settings.saved_rules``)."""


class RulesError(ValueError):
    """A permissions table of the wrong shape; the message names the file."""


@dataclass(frozen=True, slots=True)
class RuleText:
    """One rule as a source spells it, and where it came from."""

    effect: str
    text: str
    source: str
    """A file's path, or ``command line``."""
    project: bool = False
    """Written by the repository: its allow rules wait for trust."""


def table_rules(table: object, source: str, *, project: bool) -> list[RuleText]:
    """The rules of a ``permissions`` table (``{"allow": [...], "ask": [...], "deny": [...]}``);
    other keys (Claude's ``defaultMode``, ``additionalDirectories``) are not dcode's business."""
    if table is None:
        return []
    if not isinstance(table, dict):
        raise RulesError(f"{source}: permissions must be a table with allow, ask and deny lists")
    rules: list[RuleText] = []
    for effect in EFFECT_NAMES:
        items = table.get(effect, [])
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise RulesError(
                f'{source}: permissions.{effect} must be a list of rules like ["Bash(npm test:*)", "Read(./.env)"]'
            )
        rules.extend(
            RuleText(effect, item.strip(), source, project) for item in items if item.strip()
        )
    return rules


def claude_settings(path: Path) -> dict[str, object] | None:
    """A Claude Code settings file's object; None when it does not exist. Read as a project's
    config is (never a named pipe, never gigabytes); ``ValueError`` says, in words, why it
    cannot be used."""
    try:
        data = json.loads(read_config(path).decode("utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(exc.strerror or str(exc)) from None
    if not isinstance(data, dict):
        raise ValueError("settings must be a JSON object")
    return data


def json_rules(path: Path, *, project: bool) -> list[RuleText]:
    """The rules of a Claude Code settings file; none when it does not exist."""
    try:
        data = claude_settings(path)
    except ValueError as exc:
        raise RulesError(f"{path}: cannot read its permissions: {exc}") from None
    if data is None:
        return []
    return table_rules(data.get("permissions"), str(path), project=project)


def claude_rules(workspace: Path, user_home: Path) -> list[RuleText]:
    """Claude Code's files: the project's (local, then shared), then the user's."""
    rules: list[RuleText] = []
    for name in CLAUDE_PROJECT_FILES:
        rules.extend(json_rules(workspace / name, project=True))
    return rules + json_rules(user_home / ".claude" / "settings.json", project=False)


def flag_values(cli: Mapping[str, object], name: str, kind: type[T]) -> list[T]:
    """A repeatable command-line flag's values: typer gives a list of ``kind``, or None when the
    flag is not given (anything else is a caller's mistake, said as such)."""
    given = cli.get(name) or []
    if not isinstance(given, list | tuple):
        raise TypeError(f"{name}: expected a list of {kind.__name__}, not {given!r}")
    values: list[T] = []
    for value in given:
        if not isinstance(value, kind):
            raise TypeError(f"{name}: expected a list of {kind.__name__}, not {given!r}")
        values.append(value)
    return values


def flag_rules(allowed: Iterable[str] | None, disallowed: Iterable[str] | None) -> list[RuleText]:
    """``--allowedTools`` and ``--disallowedTools``: each value one rule, or several split by
    commas and spaces outside parentheses (``"Bash(git log:*) Edit"``)."""
    rules = [RuleText("deny", rule, "--disallowedTools") for rule in _split_all(disallowed)]
    return rules + [RuleText("allow", rule, "--allowedTools") for rule in _split_all(allowed)]


def _split_all(values: Iterable[str] | None) -> Iterator[str]:
    for value in values or ():
        yield from split_rules(value)


def split_rules(value: str) -> list[str]:
    """``"Bash(git log:*) Edit, Read"`` -> three rules; a space inside parentheses stays."""
    rules: list[str] = []
    current: list[str] = []
    depth = 0
    for char in value:
        if char in ", " and depth == 0:
            if current:
                rules.append("".join(current))
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current.append(char)
    if current:
        rules.append("".join(current))
    return rules


def project_file(home: Path, workspace: Path) -> Path:
    key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:24]
    return home / FOLDER / f"{key}.json"


def saved_rules(home: Path, workspace: Path) -> list[RuleText]:
    """The rules saved for ``workspace``; a damaged file is one line (``RulesError``)."""
    return json_rules(project_file(home, workspace), project=False)


def waiting_for_trust(
    rules: Iterable[RuleText], trusted: bool
) -> tuple[list[RuleText], list[RuleText]]:
    """(the rules that apply, the project's allow rules that wait until it is trusted)."""
    applied: list[RuleText] = []
    waiting: list[RuleText] = []
    for rule in rules:
        (waiting if rule.project and rule.effect == "allow" and not trusted else applied).append(
            rule
        )
    return applied, waiting


def gather(
    config_rules: Iterable[RuleText],
    workspace: Path,
    dcode_home: Path,
    user_home: Path,
    cli: Mapping[str, object],
    *,
    trusted: bool,
) -> tuple[list[RuleText], list[RuleText]]:
    """(the rules in force, the project's allow rules waiting for trust), highest source first:
    the flags, the project's Claude settings and config, the rules saved for this project, the
    user's Claude settings and config. ``config_rules``: those of the ``[permissions]`` tables."""
    config_rules = list(config_rules)
    claude = claude_rules(workspace, user_home)
    ordered = [
        *flag_rules(
            flag_values(cli, "allowed_tools", str), flag_values(cli, "disallowed_tools", str)
        ),
        *(r for r in claude if r.project),
        *(r for r in config_rules if r.project),
        *saved_rules(dcode_home, workspace),
        *(r for r in claude if not r.project),
        *(r for r in config_rules if not r.project),
    ]
    return waiting_for_trust(ordered, trusted)
