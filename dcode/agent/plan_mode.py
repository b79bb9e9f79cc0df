"""Plan mode: what the model is told, what it is refused, and the answers a plan can get.

In ``plan`` only tools that read run (``ToolKind.READ``, and web fetches, which ask as usual);
writes, the shell and tools dcode does not know (MCP tools included: nothing says they only
read) are refused with a line the model can act on. The session's agent ends by calling
``exit_plan_mode(plan)``; its answer is an ``ApprovalDecision`` made by one of the functions
below, worded here once for the TUI and headless alike:

- approved, to go on in ``edits`` or ``manual`` (the mode switches before the call returns);
- sent back with the user's feedback (the model keeps planning);
- rejected (the turn ends, still in plan mode);
- presented where nobody answers (``dcode -p --approve plan``: printed, and the turn ends).

Each plan presented is also written to ``$DCODE_HOME/conversation_history/{session}.plan.md``,
beside the session's archive, so that it outlives a compaction of the conversation.
"""

from __future__ import annotations

from pathlib import Path

from dcode.agent.decisions import ApprovalDecision
from dcode.agent.session_files import plan_path
from dcode.agent.tools.spec import EXIT_PLAN_MODE
from dcode.settings.config import ApprovalMode
from dcode.settings.private_files import write_private

PLAN_PROMPT = f"""\
# Plan mode
The user has put the session in plan mode: investigate and plan, change nothing. Only tools that \
read run (reading files, listing, searching, fetching a web page, subagents that only read); \
file edits, the shell and other tools are refused. Do not try to get around this.
1. Understand the task: read the relevant code, search for usages, check the tests.
2. When you know what to do, call {EXIT_PLAN_MODE.name} with the plan in Markdown: the changes, \
file by file, in order, and how you will check them. Ask the user first if something essential \
is unclear.
The user then approves the plan (and you carry it out), asks for changes to it, or rejects it."""

SUBAGENT_PLAN_PROMPT = """\
# Read only
The session is in plan mode: only tools that read run; file edits, the shell and other tools are \
refused. Investigate, and report what you found and what you would change."""


def refusal(tool: str) -> str:
    """What the model reads when plan mode refuses a call of ``tool``."""
    return f"plan mode: {tool} was not run, because only tools that read run until the user approves a plan; keep investigating, then present the plan"


def approve(mode: ApprovalMode) -> ApprovalDecision:
    """The plan approved: the session goes on in ``mode`` (``edits`` or ``manual``)."""
    return ApprovalDecision(True, mode=mode)


def approved_result(mode: ApprovalMode, saved: Path | None) -> str:
    """What the model reads when its plan is approved and the mode is now ``mode``."""
    where = f" It is saved at {saved}." if saved is not None else ""
    return f"The user approved the plan; the approval mode is now {mode.value}. Carry out the plan now.{where}"


def revise(feedback: str) -> ApprovalDecision:
    """Sent back: the model keeps planning with the user's ``feedback``."""
    said = feedback.strip()
    words = (
        f"the user wants changes to the plan: {said}"
        if said
        else "the user wants changes to the plan"
    )
    return ApprovalDecision(False, f"{words}. Stay in plan mode and present the revised plan")


def reject() -> ApprovalDecision:
    """Rejected: the turn ends; the session stays in plan mode."""
    return ApprovalDecision(
        False, "the user rejected the plan; stop and wait for their next message", end_turn=True
    )


def presented() -> ApprovalDecision:
    """Put to a user who reads it after the run (headless): the turn ends there."""
    return ApprovalDecision(
        False,
        "the plan was shown to the user, who will answer it in a later message; stop here",
        end_turn=True,
    )


def save_plan(history_dir: Path, session_id: str, plan: str) -> Path:
    """Write the plan presented last (0600), replacing an earlier one of the session."""
    path = plan_path(history_dir, session_id)
    write_private(path, plan if plan.endswith("\n") else f"{plan}\n")
    return path
