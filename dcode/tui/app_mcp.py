"""Starting the MCP servers, a component of ``DcodeApp``: once the engine is ready (well after
the first paint), in the background; nothing waits for them but the first turn that needs them.

The user's servers and ``--mcp-config``'s start at once. The project's ``.mcp.json`` servers
start only once the user approved the file as it is now, which the trust question at start
asks (``app_trust``); a file that came or changed since is asked about the same way, alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcode.tui import commands
from dcode.tui.app_host import AppHost
from dcode.tui.app_trust import ProjectTrust
from dcode.tui.transcript import NoticeLevel

if TYPE_CHECKING:
    from dcode.agent.engine import Engine


class McpStartup:
    """The servers started, their count in the status bar, their prompts in the / popup."""

    def __init__(self, host: AppHost, trust: ProjectTrust) -> None:
        self.host = host
        self.trust = trust
        self.prompt_entries: list[tuple[str, str]] = []
        """The servers' prompts, as slash commands in the / popup."""

    def start(self, engine: Engine) -> None:
        from dcode.mcp.plan import plan

        host = self.host
        servers = plan(host.settings)
        if servers.start or servers.awaiting is not None:  # nothing to count without servers
            host.set_interval(0.5, lambda: self._show_mcp_count(engine))
        for problem in servers.problems:
            host.call_later(host.transcript.notice, problem, NoticeLevel.WARNING)
        engine.start_mcp(servers.start)
        if servers.awaiting is None or self.trust.project_mcp_answered:
            return  # approved, or left out this session by the answer at start
        from dcode.tui.trust_request import TrustRequest

        def answered(trusted: bool) -> None:
            if trusted:
                engine.start_mcp(servers.with_project())

        self.trust.ask(TrustRequest.servers_only(host.settings, servers), answered)

    def _show_mcp_count(self, engine: Engine) -> None:
        """``MCP 2/3`` in the status bar while not every server is connected (disabled ones
        do not count)."""
        from textual.css.query import NoMatches

        host = self.host
        if engine is not host.engine:
            return
        try:
            status = host.status
        except NoMatches:  # the app is closing: its screen is gone
            return
        states = [link.state for link in engine.mcp.links.values()]
        from dcode.mcp.state import LinkState

        counted = [s for s in states if s is not LinkState.DISABLED]
        status.mcp = (sum(s is LinkState.CONNECTED for s in counted), len(counted))
        prompts = engine.mcp.prompt_entries()
        if prompts != self.prompt_entries:  # the servers' prompts join the / popup
            self.prompt_entries = prompts
            host.prompt_input.set_commands(commands.popup_entries(host.prompt_commands) + prompts)
