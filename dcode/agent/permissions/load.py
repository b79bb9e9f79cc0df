"""The session's rules, parsed from the settings' text: a rule that cannot mean anything is
left out and named in one line, and the session starts without it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from dcode.agent.permissions.match import PermissionRules
from dcode.agent.permissions.rules import Effect, Rule, RuleError, RuleSource, parse_rule
from dcode.settings.permission_sources import project_file
from dcode.settings.saved_rules import (
    remove_project_rule,
    remove_user_rule,
    save_project_rule,
    save_user_rule,
)

if TYPE_CHECKING:
    from dcode.settings.config import Settings


def session_rules(settings: Settings) -> tuple[PermissionRules, list[str]]:
    """(the rules in force, one line for each rule left out)."""
    rules: list[Rule] = []
    problems: list[str] = []
    for text in settings.permission_rules:
        try:
            rules.append(
                parse_rule(text.text, Effect(text.effect), RuleSource(text.source, text.project))
            )
        except RuleError as exc:
            problems.append(f"permission rule ignored ({text.source}): {exc}")
    home = Path(os.environ.get("HOME") or Path.home())
    return PermissionRules(tuple(rules), settings.workspace, home, settings.home), problems


def keep_rule(rules: PermissionRules, text: str, *, everywhere: bool) -> Rule:
    """Save the allow rule ``text`` for this project (a file under ``$DCODE_HOME``) or
    everywhere (the user's config), and apply it now; raises ``RuleError`` or ``OSError``."""
    if rules.dcode_home is None:
        raise RuleError("rules cannot be saved here")
    if everywhere:
        path = rules.dcode_home / "config.toml"
        save_user_rule(path, Effect.ALLOW.value, text)
    else:
        path = save_project_rule(rules.dcode_home, rules.workspace, Effect.ALLOW.value, text)
    rule = parse_rule(text, Effect.ALLOW, RuleSource(str(path)))
    rules.add(rule)
    return rule


def drop_rule(rules: PermissionRules, text: str) -> str:
    """Remove the rule ``text`` from where it was read, when dcode wrote that file (the user's
    config, the rules saved for this project); one line saying what happened."""
    found = [rule for rule in rules.rules if rule.text == text.strip()]
    if not found:
        return f"no rule {text.strip()!r} is in force"
    home = rules.dcode_home
    said = []
    for rule in found:
        source = Path(rule.source.label)
        if home is not None and source == project_file(home, rules.workspace):
            remove_project_rule(home, rules.workspace, rule.effect.value, rule.text)
        elif home is not None and source == home / "config.toml":
            remove_user_rule(source, rule.effect.value, rule.text)
        else:
            said.append(f"{rule.text} is in {rule.source.label}: edit that file to remove it")
            continue
        rules.remove(rule)
        said.append(f"removed {rule.effect.value} rule {rule.text} from {rule.source.label}")
    return "; ".join(said)
