"""An MCP server's tool as a LangChain tool, through ``langchain-mcp-adapters``.

Every call goes to the server's link of the moment (a restarted server has a new session); the
result is made readable first (``results.readable``), media are admitted to the attachment
store, and text blocks become one string. The server's progress notifications for the call go
out as ``ToolProgress`` events, which the call's line shows.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Annotated

from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool, ToolException
from langchain_mcp_adapters.interceptors import MCPToolCallRequest
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
from mcp.types import CallToolResult, Tool

from dcode.agent.events import ToolProgress
from dcode.mcp.link import Progress, ServerLink
from dcode.mcp.results import readable, stored_media
from dcode.media.store import AttachmentStore

log = logging.getLogger(__name__)


def as_text(content: object) -> object:
    """Text blocks alone as one string: text reads as text, and the output cap and the eviction
    of large results (which measure strings) apply as to every tool."""
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" for b in content
    ):
        return "\n".join(str(b.get("text", "")) for b in content)
    return content


def progress_reporter(runtime: object) -> Progress | None:
    """Where a call's progress goes: a ``ToolProgress`` event on the run's stream. The server's
    notifications arrive on the link's task, outside the run, so the event is put out in the
    run's context as it is now. The adapter types the runtime ``object | None`` (it is
    LangGraph's ``ToolRuntime`` inside a graph, None outside one), hence the ``getattr``s."""
    call_id = getattr(runtime, "tool_call_id", None)
    context = getattr(runtime, "context", None)
    emit = getattr(context, "emit", None)
    if not call_id or not callable(emit):
        return None
    agent = tuple(getattr(context, "agent", ()) or ())
    run = contextvars.copy_context()

    def report(progress: float, total: float | None, message: str | None) -> None:
        event = ToolProgress(
            call_id=call_id, progress=progress, total=total, message=message or "", agent=agent
        )
        try:
            run.run(emit, event)
        except Exception:  # progress is cosmetic; the run may have ended
            log.debug("progress of %s not shown", call_id, exc_info=True)

    return report


def langchain_tool(link: ServerLink, tool: Tool, store: AttachmentStore) -> BaseTool:
    async def route(request: MCPToolCallRequest, handler: object) -> CallToolResult:
        return readable(
            await link.call(request.name, request.args, progress_reporter(request.runtime))
        )

    # The session given is only a placeholder: every call goes through ``route``, to the
    # link's session of the moment (a restarted server has a new one).
    converted = convert_mcp_tool_to_langchain_tool(
        link.session, tool, server_name=link.name, tool_interceptors=[route]
    )
    assert isinstance(converted, StructuredTool)  # what the adapter makes, typed as its base
    original = converted.coroutine
    assert original is not None
    label = f"{link.name}.{tool.name}"

    async def call(
        runtime: Annotated[object | None, InjectedToolArg()] = None, **arguments: object
    ) -> tuple[object, None]:
        content, _structured = await original(runtime=runtime, **arguments)  # the text says it too
        return as_text(await stored_media(store, label, content)), None

    adapter_errors = converted.handle_tool_error
    assert callable(adapter_errors)

    def error(exc: ToolException) -> object:
        return as_text(adapter_errors(exc))

    return converted.model_copy(update={"coroutine": call, "handle_tool_error": error})
