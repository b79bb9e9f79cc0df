"""``/hooks``: each hook with its event, matcher, source and last result, and the project's
hooks that wait for trust."""

from __future__ import annotations

from collections.abc import Sequence

from dcode.agent.hooks.runner import Hooks
from dcode.settings.hook_sources import HOOK_EVENTS, HookCommand, skipped_line

NONE = (
    "no hooks: add them under hooks in ~/.claude/settings.json, the project's "
    ".claude/settings.json, or [hooks] in dcode's config"
)


def describe_hooks(hooks: Hooks, skipped: Sequence[HookCommand]) -> list[str]:
    """The lines ``/hooks`` shows."""
    if not hooks.records and not skipped:
        return [NONE]
    lines = [f"hooks ({len(hooks.records)}):"] if hooks.records else []
    for record in hooks.records:
        hook = record.hook
        matcher = f" [{hook.matcher}]" if hook.matcher else ""
        never = "" if hook.event in HOOK_EVENTS else " (dcode does not fire this event)"
        lines.append(f"  {hook.event}{matcher}: {hook.command}{never}")
        lines.append(f"    from {hook.source} · timeout {hook.timeout:g} s · last: {record.last}")
    if line := skipped_line(skipped):
        lines.append(line + ":")
        lines.extend(f"  {h.event}: {h.command} (from {h.source})" for h in skipped)
    return lines
