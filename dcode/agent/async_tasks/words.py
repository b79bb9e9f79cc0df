"""How the async task tools word a task's state, and how a screen reads it back.

Every result about one task begins with the same head line, ``Task ID on AGENT: STATUS.``:
the model reads it, and the screen (through ``ToolSpec.show_result``, live and in a resumed
transcript alike) draws it as a subagent's head is drawn: the agent, its remote status, the
task. Standard library only: ``dcode.agent.tools.spec`` imports this.
"""

from __future__ import annotations

import re

from dcode.agent.tools.result import preview_result

SHORT_ID_CHARS = 8
_HEAD = re.compile(r"^Task (?P<task>\S+) on (?P<agent>\S+): (?P<status>[a-z_]+)\.")


def head(task_id: str, agent: str, status: str) -> str:
    return f"Task {task_id} on {agent}: {status}."


def read_head(text: str) -> tuple[str, str, str] | None:
    """The task id, agent and status a result's head line says (None: a result without one)."""
    match = _HEAD.match(text)
    return (match["task"], match["agent"], match["status"]) if match is not None else None


def show_task_result(text: str) -> str:
    """``echo · running · task 01a25144…``, then the rest of the result's first lines (an
    answer's start); a result without the head (a failure's line) as any result shows."""
    match = _HEAD.match(text)
    if match is None:
        return preview_result(text)
    task = match["task"]
    short = task if len(task) <= SHORT_ID_CHARS else task[:SHORT_ID_CHARS] + "…"
    line = f"{match['agent']} · {match['status']} · task {short}"
    rest = preview_result(text[match.end() :], lines=2)
    return f"{line}\n{rest}" if rest else line
