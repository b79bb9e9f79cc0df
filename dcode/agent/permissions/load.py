"""The session's rules, parsed from the settings' text: a rule that cannot mean anything is
left out and named in one line, and the session starts without it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from dcode.agent.permissions.match import PermissionRules
from dcode.agent.permissions.rules import Effect, Rule, RuleError, RuleSource, parse_rule

if TYPE_CHECKING:
    from dcode.config import Settings


def session_rules(settings: Settings) -> tuple[PermissionRules, list[str]]:
    """(the rules in force, one line for each rule left out)."""
    rules: list[Rule] = []
    problems: list[str] = []
    for text in settings.permission_rules:
        try:
            rules.append(parse_rule(text.text, Effect(text.effect), RuleSource(text.source, text.project)))
        except RuleError as exc:
            problems.append(f"permission rule ignored ({text.source}): {exc}")
    home = Path(os.environ.get("HOME") or Path.home())
    return PermissionRules(tuple(rules), settings.workspace, home), problems
