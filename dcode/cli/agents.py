"""``dcode agents list``: the agents a ``task`` call may name, and the files left out.

The TUI's ``/agents`` shows the same facts, from ``agent_facts`` and ``split_problems``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from dcode.agent.subagents.definitions import BUILT_IN, AgentCatalog, AgentDefinition, catalog_for
from dcode.settings.config import Settings
from dcode.terminal_text import json_safe

PARENT = "the parent's"


def agent_facts(agent: AgentDefinition) -> list[tuple[str, str]]:
    """(label, value) rows for one agent: where it comes from and what it may use."""
    return [
        ("source", agent.path or BUILT_IN),
        ("tools", _tools(agent.tools)),
        ("model", agent.model or PARENT),
        (
            "approve",
            f"{agent.approve.value}, or {PARENT} mode if stricter"
            if agent.approve
            else f"{PARENT} mode",
        ),
    ]


def _tools(tools: tuple[str, ...] | None) -> str:
    if tools is None:
        return f"all of {PARENT}"
    return ", ".join(tools) if tools else "none"


def split_problems(catalog: AgentCatalog) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The problems as (files left out, settings ignored in agents that loaded)."""
    loaded = {agent.path for agent in catalog.agents.values()}
    left_out = [problem for problem in catalog.problems if problem[0] not in loaded]
    ignored = [problem for problem in catalog.problems if problem[0] in loaded]
    return left_out, ignored


def render(catalog: AgentCatalog) -> str:
    lines: list[str] = []
    for agent in catalog.agents.values():
        lines += [agent.name, f"  {agent.description}"]
        lines += [f"  {label + ':':<8} {value}" for label, value in agent_facts(agent)]
        lines.append("")
    left_out, ignored = split_problems(catalog)
    for title, problems in (("Ignored in the agents above:", ignored), ("Not loaded:", left_out)):
        if problems:
            lines.append(title)
            lines += [f"  {path}: {reason}" for path, reason in problems]
            lines.append("")
    return "\n".join(lines).rstrip()


def list_agents(settings: Settings, *, as_json: bool = False, user: Path | None = None) -> str:
    catalog = catalog_for(settings, user)
    if not as_json:
        return render(catalog)
    data = {
        "agents": [asdict(agent) for agent in catalog.agents.values()],
        "problems": [{"path": path, "reason": reason} for path, reason in catalog.problems],
    }
    return json_safe(json.dumps(data, indent=2))
