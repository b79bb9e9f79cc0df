"""What ``/permissions`` shows: every rule in force with its source, the project's allow rules
that wait for trust, and the calls refused most recently, with why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dcode.agent.permissions.match import PermissionRules
from dcode.agent.permissions.rules import EFFECTS

if TYPE_CHECKING:
    from dcode.agent.approval import Denial
    from dcode.settings.permission_sources import RuleText

RECENT_DENIALS = 10


def describe_permissions(
    rules: PermissionRules | None, waiting: Sequence[RuleText], denials: Sequence[Denial]
) -> list[str]:
    """The lines, grouped by effect, strongest first."""
    lines: list[str] = []
    in_force = rules.rules if rules is not None else ()
    for effect in EFFECTS:
        of_effect = [rule for rule in in_force if rule.effect is effect]
        if of_effect:
            lines.append(f"{effect.value}:")
            lines.extend(f"  {rule.text}  ({rule.source.label})" for rule in of_effect)
    if not lines:
        lines.append("no permission rules: the approval mode alone decides")
    if waiting:
        lines.append("waiting until you trust the project (allow):")
        lines.extend(f"  {rule.text}  ({rule.source})" for rule in waiting)
    recent = list(denials)[-RECENT_DENIALS:]
    if recent:
        lines.append("recent denials:")
        lines.extend(f"  {denial.tool}: {denial.reason}" for denial in recent)
    lines.append("/permissions remove RULE removes a rule you saved")
    return lines
