"""The ``init`` event a headless run opens with: what the model is given, and which MCP servers
did not start, said before the turn instead of discovered in its answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcode import __version__
from dcode.agent.events import McpServerState, SessionInit
from dcode.agent.graph import static_request
from dcode.settings.config import ApprovalMode

if TYPE_CHECKING:
    from dcode.agent.engine import Engine


async def session_init(engine: Engine, session_id: str, mode: ApprovalMode) -> SessionInit:
    """Waits for the MCP servers still connecting (each up to its connect timeout, as the turn
    would), so every state is final. Their "connected" or "failed" notices are not repeated
    at the turn's start: the event carries the states."""
    await engine.prepare_turn()
    mcp = engine.mcp.snapshot()
    _, own = static_request(
        engine.backend,
        engine.compactor,
        engine.task_tool,
        planning=mode is ApprovalMode.PLAN,
        remote_agents=engine.remote_agents,
    )
    return SessionInit(
        session_id=session_id,
        model=engine.resolved.spec,
        cwd=str(engine.settings.workspace),
        approve=mode.value,
        tools=(*(tool.name for tool in own), *(tool.name for tool in mcp.tools)),
        mcp_servers=tuple(McpServerState(s.name, s.state.value, s.error) for s in mcp.servers),
        version=__version__,
    )
