"""An answer to an approval request, in a module of its own: the policy (``approval``) and
what words plan mode's answers (``plan_mode``) both make them, and neither imports the other
for it."""

from __future__ import annotations

from dataclasses import dataclass

from dcode.settings.config import ApprovalMode


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    approved: bool
    feedback: str = ""
    remember: bool = False
    """Yes for the rest of the session: to this kind, or to this tool dcode does not know."""
    whole_server: bool = False
    """With ``remember``, for an MCP tool: to every tool of its server."""
    mode: ApprovalMode | None = None
    """With approval, for a plan: the mode the session goes on in."""
    end_turn: bool = False
    """With a denial: the turn ends with this call's result (a plan rejected, or put to a user
    who answers it after the run)."""
    save_rule: str = ""
    """An allow rule to keep from now on (the one the question suggested)…"""
    everywhere: bool = False
    """…in the user's config, rather than for this project alone."""
