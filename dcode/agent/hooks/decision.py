"""How a ``PreToolUse`` hook's ``permissionDecision`` joins the approval's verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcode.agent.approval import Verdict
from dcode.agent.events import ApprovalKind
from dcode.agent.tools.spec import ToolKind, spec_for

if TYPE_CHECKING:
    from dcode.agent.hooks.runner import Hooks

_KINDS = {
    ToolKind.SHELL: ApprovalKind.SHELL,
    ToolKind.WRITE: ApprovalKind.EDIT,
    ToolKind.NETWORK: ApprovalKind.FETCH,
}


def hook_verdict(verdict: Verdict | None, decision: str, why: str, name: str) -> Verdict | None:
    """The approval's verdict once a ``PreToolUse`` hook's ``permissionDecision`` is heard: a
    refusal stands (a ``deny`` rule), a hook's ``deny`` refuses, its ``ask`` asks every time, its
    ``allow`` lifts only what the mode would ask (not an ``ask`` rule or a protected file)."""
    if verdict is not None and verdict.refused:
        return verdict
    match decision:
        case "deny":
            return Verdict(ApprovalKind.TOOL, why or "a hook denied this call", refused=True)
        case "ask":
            kind = _KINDS.get(spec_for(name).kind, ApprovalKind.TOOL)
            reason = why or "a hook asks about this call"
            return verdict or Verdict(kind, reason, every_time=True)
        case "allow" if verdict is not None and not verdict.every_time:
            return None
    return verdict


def hook_decision(hooks: Hooks | None, call_id: str) -> tuple[str, str]:
    """The ``PreToolUse`` hooks' ``permissionDecision`` for ``call_id`` (and its reason), taken."""
    if hooks is None:
        return "", ""
    return hooks.decisions.pop(call_id, ("", ""))
