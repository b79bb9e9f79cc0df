"""Which MCP servers start: the user's and ``--mcp-config``'s always (unless ``--no-mcp``), the
project's ``.mcp.json`` only once the user approved that file as it is now (or with
``--trust-project-mcp``). Standard library only: the TUI asks it before the engine opens.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from dcode.mcp.approvals import approval
from dcode.mcp.config import (
    ConfigFile,
    McpSources,
    ProjectEnv,
    ServerConfig,
    load_sources,
    references,
)
from dcode.settings.config import Settings
from dcode.settings.trust import TrustState


@dataclass(frozen=True, slots=True)
class McpPlan:
    sources: McpSources = field(default_factory=McpSources)
    start: tuple[ServerConfig, ...] = ()
    """The servers to start now."""
    awaiting: ConfigFile | None = None
    """The project's file, when it has servers the user has not approved (in this content)."""
    awaiting_state: TrustState = TrustState.NONE
    readable: ProjectEnv = field(default_factory=ProjectEnv)
    """What the project's file may expand (its approval says what it reads)."""

    @property
    def problems(self) -> list[str]:
        return self.sources.problems

    def with_project(self) -> tuple[ServerConfig, ...]:
        """Every server, the project's included (after the user approved its file)."""
        return tuple(self.sources.servers().values())


def project_env(settings: Settings) -> ProjectEnv:
    """What a project's ``.mcp.json`` may expand: the user's ``[mcp] project_env``, less every
    variable that holds a provider's key or address (the list the shell is kept from too)."""
    from dcode.settings.presets import provider_variables

    keys = frozenset(name.upper() for name in provider_variables(settings.providers))
    return ProjectEnv(frozenset(settings.mcp.project_env), keys, str(settings.user_config))


def plan(settings: Settings, env: Mapping[str, str] | None = None) -> McpPlan:
    if not settings.mcp.enabled:
        return McpPlan()
    readable = project_env(settings)
    sources = load_sources(settings.home, settings.workspace, settings.mcp.configs, env, readable)
    project = sources.project
    state = TrustState.NONE
    if project is not None and project.runnable and not settings.mcp.trust_project:
        state = approval(settings.home, project)
    approved = state in (TrustState.NONE, TrustState.TRUSTED)
    start = tuple(sources.servers(include_project=approved).values())
    return McpPlan(sources, start, None if approved else project, state, readable)


def skipped_warning(mcp: McpPlan) -> str | None:
    """The one line headless prints when the project's servers are left out."""
    file = mcp.awaiting
    if file is None:
        return None
    names = ", ".join(s.name for s in file.runnable)
    changed = ", changed since you approved it," if mcp.awaiting_state is TrustState.CHANGED else ""
    return (
        f"dcode: warning: not starting the MCP servers of {shlex.quote(str(file.path))}{changed} ({names}): "
        "approve the file in the TUI, or pass --trust-project-mcp"
    )


@dataclass(frozen=True, slots=True)
class Note:
    """One thing an approval says of a server besides its command or URL."""

    text: str
    warning: bool = False


def notes(server: ServerConfig, readable: ProjectEnv) -> list[Note]:
    """Each variable the server reads from the environment, why it does not start, and whose
    server of that name it replaces."""
    said = []
    if server.disabled:
        said.append(Note("disabled in the file: not started"))
    if server.variables:
        said.append(Note(f"reads {references(server.variables)} from your environment"))
    if server.refused:
        said.append(Note(readable.refusal(server.refused), warning=True))
    if server.shadows is not None:
        said.append(
            Note(
                f"replaces your own {server.name}: your [mcp] allow rules for {server.name} do not apply to it",
                warning=True,
            )
        )
    return said
