"""``read_mcp_resource(server, uri)``: the model reads a resource an MCP server lists (``/mcp``
shows them) or a tool result linked to.

Text comes back as text, images through the attachment store, text blobs decoded, other
blobs as a line saying what they were: the same as a tool's result (``results``).
"""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from mcp import McpError
from mcp.types import (
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
)

from dcode.agent.tools.args import ReadMcpResourceArgs
from dcode.agent.tools.spec import READ_MCP_RESOURCE
from dcode.mcp.failures import clean
from dcode.mcp.link import ServerLink
from dcode.mcp.results import resource_blocks, stored_media
from dcode.mcp.state import LinkState
from dcode.mcp.tools import as_text
from dcode.media.store import AttachmentStore

DESCRIPTION = (
    "Read a resource of an MCP server: a file, a record or a document the server offers by URI. "
    "Use it for the resources the system prompt's MCP section says a server has, and for the "
    "resource links that MCP tool results give."
)


def lc_block(block: ContentBlock) -> dict[str, object]:
    """A readable MCP block as a LangChain content block."""
    match block:
        case TextContent(text=text):
            return {"type": "text", "text": text}
        case ImageContent(data=data, mimeType=mime):
            return {"type": "image", "base64": data, "mime_type": mime}
        case EmbeddedResource(resource=resource):
            return {
                "type": "file",
                "base64": resource.blob if isinstance(resource, BlobResourceContents) else "",
                "mime_type": resource.mimeType,
                "url": str(resource.uri),
            }
    return {"type": "text", "text": f"[{block.type}: not shown]"}


def resource_tool(links: Mapping[str, ServerLink], store: AttachmentStore) -> BaseTool:
    async def read(server: str, uri: str) -> object:
        link = links.get(server)
        offering = sorted(
            name
            for name, each in links.items()
            if each.resources and each.state is LinkState.CONNECTED
        )
        if link is None:
            raise ToolException(
                f"no MCP server is named {server!r}; servers with resources: {', '.join(offering) or 'none'}"
            )
        try:
            result = await link.read_resource(uri)
        except LookupError as exc:
            raise ToolException(str(exc)) from None
        except McpError as exc:
            raise ToolException(
                f"the MCP server {server} cannot read {uri}: {clean(exc.error.message)}"
            ) from None
        except TimeoutError:
            raise ToolException(
                f"the MCP server {server} did not answer within {link.call_timeout:g} s"
            ) from None
        except ValueError as exc:  # a URI that does not parse
            raise ToolException(f"{uri!r} is not a URI: {clean(str(exc))}") from None
        blocks = [lc_block(b) for b in resource_blocks(list(result.contents))]
        return (
            as_text(await stored_media(store, f"{server}.{uri}", blocks))
            if blocks
            else f"{uri} is empty"
        )

    return StructuredTool.from_function(
        coroutine=read,
        name=READ_MCP_RESOURCE.name,
        description=DESCRIPTION,
        args_schema=ReadMcpResourceArgs,
        handle_tool_error=True,
    )
