"""What trusting the project would enable, gathered once at start for the one trust question.

A repository can ask for more than the user's own settings allow in several files: settings in
``.dcode/config.toml`` (``project_gate``), models for its agents (``subagents.definitions``),
MCP servers in ``.mcp.json`` (``mcp.plan``). Each keeps its own record (the project's trust, the
file's MCP approval) and its own rules; the question is asked once, listing them all, and a yes
records each. Reading the files blocks: call ``trust_request`` in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dcode.settings.config import Settings
from dcode.settings.trust import TrustState

if TYPE_CHECKING:
    from dcode.agent.subagents.definitions import AgentDefinition
    from dcode.mcp.plan import McpPlan


@dataclass(frozen=True)
class TrustRequest:
    """Everything the project asks for that waits for the user's yes. ``settings`` are those
    resolved now (their ``ignored`` the settings left out); ``mcp`` the plan whose
    ``awaiting`` file has servers not approved in this content, else None; ``agents`` the
    project's agents whose model is left out. The project's hooks are among the settings
    left out (``settings.skipped_hooks`` holds them whole): they run programs, so they wait for
    the same yes."""

    settings: Settings
    mcp: McpPlan | None = None
    agents: tuple[AgentDefinition, ...] = field(default=())

    @property
    def project_trust(self) -> bool:
        """Whether the answer is recorded as the project's trust (settings or agents ask)."""
        return bool(self.settings.ignored or self.agents)

    @property
    def changed(self) -> bool:
        """Trusted or approved once, changed since."""
        mcp_changed = self.mcp is not None and self.mcp.awaiting_state is TrustState.CHANGED
        return mcp_changed or (self.project_trust and self.settings.trust is TrustState.CHANGED)

    @property
    def server_names(self) -> str:
        file = self.mcp.awaiting if self.mcp is not None else None
        return ", ".join(server.name for server in file.runnable) if file is not None else ""

    @classmethod
    def servers_only(cls, settings: Settings, mcp: McpPlan) -> TrustRequest:
        """The question about the project's MCP servers alone (the rest was answered)."""
        return cls(replace(settings, ignored=()), mcp)

    def __bool__(self) -> bool:
        return self.project_trust or self.mcp is not None


def trust_request(
    settings: Settings, *, mcp: bool = True, user: Path | None = None
) -> TrustRequest:
    """What this project asks for now (falsy when nothing waits); ``mcp=False`` leaves its MCP
    servers out of the question (already answered this session)."""
    from dcode.mcp.plan import plan

    servers = plan(settings) if mcp else None
    agents: tuple[AgentDefinition, ...] = ()
    if settings.trust in (TrustState.UNTRUSTED, TrustState.CHANGED):
        from dcode.agent.subagents.definitions import models_awaiting_trust

        agents = tuple(models_awaiting_trust(settings, user))
    awaiting = servers if servers is not None and servers.awaiting is not None else None
    return TrustRequest(settings, awaiting, agents)
