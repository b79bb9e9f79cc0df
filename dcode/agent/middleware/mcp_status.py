"""The MCP servers in the system message: each with its state, up to 10 of its tool names and
of its resources, and the instructions a connected server gives (fenced, capped).

Hook: ``awrap_model_call``, appending one section after the static instructions. The text is
worked out when the graph is built, from the servers' states of that turn; the graph is built
again only when a state or a tool list changes (``Engine.prepare_turn``), so the prompt stays
byte-stable turn after turn. A server's error text is the server's, not dcode's: it is cleaned
(one line, no control characters), capped at 200 characters and fenced as ``<error>``. A server's instructions are the server's
too: escaped, capped at 2,000 characters, and fenced as ``<mcp_instructions>`` inside the section.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse

from dcode.agent.fences import Fence, escape_fenced
from dcode.agent.middleware.system_sections import with_section
from dcode.agent.run_context import RunContext
from dcode.agent.tools.spec import READ_MCP_RESOURCE
from dcode.mcp.failures import clean
from dcode.mcp.manager import ServerStatus
from dcode.mcp.state import LinkState

MAX_TOOLS_SHOWN = 10
MAX_RESOURCES_SHOWN = 10
MAX_ERROR_CHARS = 200
MAX_INSTRUCTIONS_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_STATES = {
    LinkState.CONNECTED: "connected",
    LinkState.CONNECTING: "not connected yet (its tools come in a later turn if it starts)",
    LinkState.FAILED: "failed: its tools are unavailable",
    LinkState.NEEDS_LOGIN: "needs login: its tools are unavailable until the user logs in",
    LinkState.DISABLED: "disabled by the user",
}


def mcp_section(servers: Sequence[ServerStatus]) -> str:
    """The section's text; empty without servers."""
    if not servers:
        return ""
    lines = ["MCP servers configured for this session (their tools are named mcp__SERVER__TOOL):"]
    for server in sorted(servers, key=lambda s: s.name):
        lines.append(f"- {escape_fenced(server.name)}: {_STATES[server.state]}")
        if server.tools:
            shown = ", ".join(escape_fenced(t) for t in server.tools[:MAX_TOOLS_SHOWN])
            more = len(server.tools) - MAX_TOOLS_SHOWN
            lines.append(f"  tools: {shown}{f' (and {more} more)' if more > 0 else ''}")
        if server.resources:
            lines.append(_resources(server))
        if server.instructions:
            lines.append(_instructions(server.instructions))
        if server.error and server.state is not LinkState.CONNECTED:
            lines.append(
                f"  <{Fence.ERROR}>{escape_fenced(clean(server.error, MAX_ERROR_CHARS))}</{Fence.ERROR}>"
            )
    body = "\n".join(lines)
    return f"<{Fence.MCP_SERVERS}>\n{body}\n</{Fence.MCP_SERVERS}>"


def _resources(server: ServerStatus) -> str:
    shown = ", ".join(
        escape_fenced(clean(f"{r.uri} ({r.name})" if r.name and r.name != r.uri else r.uri, 120))
        for r in server.resources[:MAX_RESOURCES_SHOWN]
    )
    more = len(server.resources) - MAX_RESOURCES_SHOWN
    return f"  resources (read them with {READ_MCP_RESOURCE.name}): {shown}{f' (and {more} more)' if more > 0 else ''}"


def _instructions(text: str) -> str:
    """The server's instructions as it wrote them, lines kept, control characters and fence
    tags disarmed, at most ``MAX_INSTRUCTIONS_CHARS``."""
    text = _CONTROL.sub(" ", text.replace("\r\n", "\n")).strip()
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        text = text[: MAX_INSTRUCTIONS_CHARS - 1] + "…"
    return f"  the server's instructions:\n  <{Fence.MCP_INSTRUCTIONS}>\n{escape_fenced(text)}\n  </{Fence.MCP_INSTRUCTIONS}>"


class McpStatusMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    def __init__(self, servers: Sequence[ServerStatus]) -> None:
        super().__init__()
        self.text = mcp_section(servers)

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await handler(with_section(request, self.text))
