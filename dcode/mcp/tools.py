"""An MCP server's tool as a LangChain tool, through ``langchain-mcp-adapters``.

Every call goes to the server's link of the moment (a restarted server has a new session);
audio the adapter cannot carry becomes a line saying it was there; media are admitted to the
attachment store; text blocks become one string.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.tools import BaseTool, InjectedToolArg
from langchain_mcp_adapters.interceptors import MCPToolCallRequest
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
from mcp.types import AudioContent, TextContent

from dcode.mcp.link import ServerLink
from dcode.mcp.results import stored_media
from dcode.media.store import AttachmentStore


def as_text(content: Any) -> Any:
    """Text blocks alone as one string: text reads as text, and the output cap and the eviction
    of large results (which measure strings) apply as to every tool."""
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text", "")) for b in content)
    return content


def langchain_tool(link: ServerLink, tool: Any, store: AttachmentStore) -> BaseTool:
    async def route(request: MCPToolCallRequest, handler: Any) -> Any:
        result = await link.call(request.name, request.args)
        # The adapter refuses audio (it raises); the model is told it was there instead.
        result.content = [TextContent(type="text", text=f"[{c.mimeType} audio: not supported]") if isinstance(c, AudioContent) else c for c in result.content]
        return result

    # The session given is only a placeholder: every call goes through ``route``, to the
    # link's session of the moment (a restarted server has a new one).
    converted = convert_mcp_tool_to_langchain_tool(link._session, tool, server_name=link.name, tool_interceptors=[route])  # type: ignore[list-item]
    original = converted.coroutine
    assert original is not None
    label = f"{link.name}.{tool.name}"

    async def call(runtime: Annotated[object | None, InjectedToolArg()] = None, **arguments: Any) -> Any:
        content, _structured = await original(runtime=runtime, **arguments)  # the text says it too
        return as_text(await stored_media(store, label, content)), None

    adapter_errors = converted.handle_tool_error
    assert callable(adapter_errors)

    def error(exc: Exception) -> Any:
        return as_text(adapter_errors(exc))

    return converted.model_copy(update={"coroutine": call, "handle_tool_error": error})
