"""Which MCP servers start: the user's and ``--mcp-config``'s always (unless ``--no-mcp``), the
project's ``.mcp.json`` only once the user approved that file as it is now (or with
``--trust-project-mcp``). Standard library only: the TUI asks it before the engine opens.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from dcode.config import Settings
from dcode.mcp.approvals import approval
from dcode.mcp.config import ConfigFile, McpSources, ServerConfig, load_sources
from dcode.trust import TrustState


@dataclass(frozen=True, slots=True)
class McpPlan:
    sources: McpSources = field(default_factory=McpSources)
    start: tuple[ServerConfig, ...] = ()
    """The servers to start now."""
    awaiting: ConfigFile | None = None
    """The project's file, when it has servers the user has not approved (in this content)."""
    awaiting_state: TrustState = TrustState.NONE

    @property
    def problems(self) -> list[str]:
        return self.sources.problems

    def with_project(self) -> tuple[ServerConfig, ...]:
        """Every server, the project's included (after the user approved its file)."""
        return tuple(self.sources.servers().values())


def plan(settings: Settings, env: Mapping[str, str] | None = None) -> McpPlan:
    if not settings.mcp.enabled:
        return McpPlan()
    sources = load_sources(settings.home, settings.workspace, settings.mcp.configs, env)
    project = sources.project
    state = TrustState.NONE
    if project is not None and project.servers and not settings.mcp.trust_project:
        state = approval(settings.home, project)
    approved = state in (TrustState.NONE, TrustState.TRUSTED)
    start = tuple(sources.servers(include_project=approved).values())
    return McpPlan(sources, start, None if approved else project, state)


def skipped_warning(mcp: McpPlan) -> str | None:
    """The one line headless prints when the project's servers are left out."""
    file = mcp.awaiting
    if file is None:
        return None
    names = ", ".join(s.name for s in file.servers)
    changed = ", changed since you approved it," if mcp.awaiting_state is TrustState.CHANGED else ""
    return (
        f"dcode: warning: not starting the MCP servers of {shlex.quote(str(file.path))}{changed} ({names}): "
        "approve the file in the TUI, or pass --trust-project-mcp"
    )
