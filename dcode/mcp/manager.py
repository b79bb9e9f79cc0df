"""The MCP servers of one engine: connected in the background, their tools handed out per turn.

``add`` starts servers (each connects in a task of its own, see ``link``); nothing waits for
them then. ``for_turn`` is what a turn asks at its start: it waits for servers still
connecting, up to their connect timeout, and returns the tools of the connected ones (fixed for
that turn), the servers' states, and a notice for each server whose state changed since the
last turn. ``close`` stops every server (a stdio server's process ends with its session).

The MCP SDK and the adapter load with the first server: an engine without servers never
imports them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from dcode.mcp.config import ServerConfig, Transport
from dcode.mcp.names import allowed, assign_names, tool_name
from dcode.mcp.state import LinkState
from dcode.media.store import AttachmentStore
from dcode.sandbox.confine import Sandbox
from dcode.settings.config import McpSettings

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from dcode.mcp.link import ServerLink

LOG_DIR = "mcp-logs"


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    transport: Transport
    target: str
    state: LinkState
    tools: tuple[str, ...] = ()
    """The model-facing names of its tools, as the turn got them."""
    descriptions: tuple[str, ...] = ()
    error: str = ""
    instructions: str = ""
    """What the server says of how to use it (its ``initialize`` answer), as it wrote it."""
    resources: tuple[ResourceInfo, ...] = ()
    task_only: tuple[str, ...] = ()
    """Tools not offered: the server runs them only as tasks, which dcode does not."""
    prompts: tuple[str, ...] = ()
    """Its prompts' slash commands (``mcp__server__prompt``)."""


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    uri: str
    name: str
    description: str = ""
    mime_type: str = ""


@dataclass(frozen=True, slots=True)
class McpTurn:
    tools: list[BaseTool] = field(default_factory=list)
    servers: tuple[ServerStatus, ...] = ()
    notices: tuple[str, ...] = ()
    allowed: frozenset[str] = frozenset()
    """The model-facing names of the tools that run without asking: named in ``[mcp] allow``
    by their server's own name, and not of a project's server that shadows one of the user's."""
    origins: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Each model-facing name's server and tool as the server names it: a name can pass to
    another tool when servers come and go, an approval for the session must not."""

    def by_server(self) -> dict[str, list[BaseTool]]:
        """The tools, grouped by their server (``/context`` counts each server's)."""
        names = {tool.name: tool for tool in self.tools}
        return {s.name: [names[n] for n in s.tools if n in names] for s in self.servers if s.tools}

    @property
    def key(self) -> tuple[object, ...]:
        """What the graph is built from: it changes only when the tools or the states do."""
        return tuple(
            (s.name, s.state, s.tools, s.error, s.instructions, bool(s.resources))
            for s in self.servers
        )


class LinkOptions(TypedDict, total=False):
    """The ``ServerLink`` timings a caller (the tests) may set for every link."""

    sse_read_timeout: float
    steady_after: float


class McpManager:
    def __init__(
        self,
        settings: McpSettings,
        *,
        home: Path,
        workspace: Path,
        store: AttachmentStore,
        reserved: Iterable[str] = (),
        roots: tuple[Path, ...] = (),
        link_options: LinkOptions | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.settings = settings
        self.sandbox = sandbox
        """Where servers that ask for the sandbox (``"sandbox": true``) run."""
        self.log_dir = home / LOG_DIR
        self.workspace = workspace
        self.roots = roots or (workspace,)
        """The directories servers are offered as their roots: the workspace (and any other
        directory the session may use)."""
        self.link_options: LinkOptions = link_options or {}
        self.store = store
        self.reserved = frozenset(reserved)
        self.links: dict[str, ServerLink] = {}
        self._announced: dict[str, tuple[LinkState, tuple[str, ...]]] = {}
        self._built: dict[tuple[str, int], list[tuple[str, BaseTool]]] = {}
        self._resource_tool: BaseTool | None = None

    def add(self, servers: Iterable[ServerConfig]) -> None:
        """Start the servers not started yet (a name already here keeps its first config)."""
        for config in servers:
            if config.name in self.links:
                continue
            from dcode.mcp.link import ServerLink  # the SDK: only once a server is configured

            link = ServerLink(
                config,
                connect_timeout=self.settings.connect_timeout,
                call_timeout=self.settings.call_timeout,
                log_dir=self.log_dir,
                workspace=self.workspace,
                roots=self.roots,
                sandbox=self.sandbox,
                **self.link_options,
            )
            self.links[config.name] = link
            link.start()

    async def for_turn(self) -> McpTurn:
        waiting = [
            link.ready() for link in self.links.values() if link.state is LinkState.CONNECTING
        ]
        if waiting:
            await asyncio.gather(*waiting)  # each waits at most until its watchdog fails it
        return self.snapshot(announce=True)

    def snapshot(self, *, announce: bool = False) -> McpTurn:
        links = list(self.links.values())
        up = [link for link in links if link.state is LinkState.CONNECTED]
        names = assign_names(
            [(link.name, tool.name) for link in up for tool in link.tools], self.reserved
        )
        tools: list[BaseTool] = []
        by_server: dict[str, list[BaseTool]] = {}
        free: set[str] = set()
        for link in up:
            for original, tool in self._tools_of(link):
                named = tool.model_copy(update={"name": names[(link.name, original)]})
                tools.append(named)
                by_server.setdefault(link.name, []).append(named)
                if self._allowed(link.config, original):
                    free.add(named.name)
        if any(link.resources for link in up):
            tools.append(self._resources_tool())
        statuses = tuple(
            ServerStatus(
                link.name,
                link.transport,
                link.config.target,
                link.state,
                tuple(t.name for t in by_server.get(link.name, [])),
                tuple(t.description for t in by_server.get(link.name, [])),
                link.error,
                link.instructions if link.state is LinkState.CONNECTED else "",
                tuple(
                    ResourceInfo(str(r.uri), r.name, r.description or "", r.mimeType or "")
                    for r in link.resources
                )
                if link.state is LinkState.CONNECTED
                else (),
                tuple(link.task_only),
                tuple(tool_name(link.name, p.name) for p in link.prompts)
                if link.state is LinkState.CONNECTED
                else (),
            )
            for link in links
        )
        notices = tuple(self._notices(links)) if announce else ()
        return McpTurn(
            tools, statuses, notices, frozenset(free), {name: pair for pair, name in names.items()}
        )

    def _allowed(self, config: ServerConfig, tool: str) -> bool:
        """A project's server named like one of the user's is another server: the user's
        rules for that name are not its."""
        return config.shadows is None and allowed(self.settings.allow, config.name, tool)

    def _notices(self, links: list[ServerLink]) -> Iterable[str]:
        """A line for each server whose state changed since the last turn, or whose tools did
        while it stayed connected (a link made again with the same tools says nothing)."""
        for link in links:
            if link.state is LinkState.CONNECTING:
                continue
            tools = tuple(t.name for t in link.tools) if link.state is LinkState.CONNECTED else ()
            before = self._announced.get(link.name)
            self._announced[link.name] = (link.state, tools)
            count = len(link.tools)
            match link.state:
                case _ if before == (link.state, tools):
                    continue
                case LinkState.CONNECTED if before is not None and before[0] is LinkState.CONNECTED:
                    yield f"MCP server {link.name} changed its tools: {count} tool{'s' if count != 1 else ''} from this turn on"
                case LinkState.CONNECTED:
                    yield f"MCP server {link.name} connected: {count} tool{'s' if count != 1 else ''} from this turn on"
                case LinkState.NEEDS_LOGIN:
                    yield f"MCP server {link.name} needs a login: {link.error}"
                case LinkState.FAILED:
                    yield f"MCP server {link.name} failed: {link.error}"

    def _resources_tool(self) -> BaseTool:
        if self._resource_tool is None:
            from dcode.mcp.resources import resource_tool

            self._resource_tool = resource_tool(self.links, self.store)
        return self._resource_tool

    def _tools_of(self, link: ServerLink) -> list[tuple[str, BaseTool]]:
        key = (link.name, link.revision)
        if key not in self._built:
            from dcode.mcp.tools import langchain_tool  # the adapter: only once a server is up

            self._built[key] = [
                (tool.name, langchain_tool(link, tool, self.store)) for tool in link.tools
            ]
        return self._built[key]

    async def settled(self) -> None:
        """Wait for the servers still connecting (each at most until its watchdog fails it)."""
        waiting = [
            link.ready() for link in self.links.values() if link.state is LinkState.CONNECTING
        ]
        if waiting:
            await asyncio.gather(*waiting)

    def prompt_entries(self) -> list[tuple[str, str]]:
        """(command name, label) for each prompt of a connected server, for the ``/`` popup."""
        from dcode.mcp.prompts import prompt_commands

        found = prompt_commands(list(self.links.values()))
        return [(name, command.label) for name, (command, _) in sorted(found.items())]

    async def expand_prompt(self, typed: str) -> str:
        """What ``/mcp__server__prompt args`` sends, once the servers have settled; raises
        ``dcode.mcp.prompts.PromptError``."""
        from dcode.mcp.prompts import expand

        await self.settled()
        return await expand(list(self.links.values()), typed)

    async def disable(self, name: str) -> None:
        if (link := self.links.get(name)) is not None:
            await link.disable()

    async def reconnect(self, name: str) -> None:
        if (link := self.links.get(name)) is not None:
            await link.reconnect()

    async def close(self) -> None:
        await asyncio.gather(
            *(link.close() for link in self.links.values()), return_exceptions=True
        )
