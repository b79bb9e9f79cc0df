"""An MCP tool's result as dcode keeps it: text as text, images admitted into the attachment
store (history holds a reference; each request carries the variant sized for the route), other
binary content as a line saying what it was.

``readable`` first puts what the adapter would drop or hide into words the model can use: a
structured result whose ``content`` is empty is sent as its JSON, a text or JSON blob is
decoded to its text, a resource link is its name, description and URI (the model can read it
with the resource tool), and audio is a line saying it was there. The adapter then turns the
MCP content into LangChain blocks (images and image blobs into base64 image blocks, other
blobs into file blocks), and ``stored_media`` keeps the shape media results share: a text
block first, then the rest.
"""

from __future__ import annotations

import base64
import binascii
import json

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from dcode.media.attachment import to_reference_block
from dcode.media.errors import MediaError
from dcode.media.store import AttachmentStore, Source

_TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/yaml",
    "application/x-yaml",
    "application/javascript",
    "application/toml",
    "application/x-sh",
)


def is_text_type(mime: str | None) -> bool:
    """Whether content of this media type is text (``text/*``, JSON, XML, YAML and the like)."""
    if not mime:
        return False
    mime = mime.split(";")[0].strip().lower()
    return mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml"))


def readable(result: CallToolResult) -> CallToolResult:
    """``result`` with each block the model could not otherwise read turned into text."""
    content = [_block(c) for c in result.content]
    if not content and result.structuredContent is not None:
        content = [
            TextContent(
                type="text", text=json.dumps(result.structuredContent, ensure_ascii=False, indent=2)
            )
        ]
    return result.model_copy(update={"content": content})


def _block(block: ContentBlock) -> ContentBlock:
    match block:
        case AudioContent(mimeType=mime):
            return TextContent(type="text", text=f"[{mime} audio: not supported]")
        case ResourceLink():
            return TextContent(type="text", text=link_text(block))
        case EmbeddedResource(resource=BlobResourceContents() as blob) if (
            is_text_type(blob.mimeType) and (text := blob_text(blob)) is not None
        ):
            return TextContent(type="text", text=text)
        case EmbeddedResource(resource=BlobResourceContents() as blob) if not (
            blob.mimeType or ""
        ).startswith("image/"):
            return TextContent(type="text", text=_unshown(blob))
    return block


def _unshown(blob: BlobResourceContents) -> str:
    try:
        size = f", {len(base64.b64decode(blob.blob)):,} bytes"
    except (binascii.Error, ValueError):
        size = ""
    return f"[{blob.mimeType or 'binary data'} at {blob.uri}{size}: not shown]"


def link_text(link: ResourceLink) -> str:
    """A resource link as the model reads it: its name, what it is, and where."""
    title = link.title or link.name
    parts = [f"[resource {title}"]
    if link.mimeType:
        parts.append(f" ({link.mimeType})")
    parts.append(f": {link.uri}]")
    if link.description:
        parts.append(f" {link.description}")
    return "".join(parts)


def blob_text(blob: BlobResourceContents) -> str | None:
    """A text blob's text (None when it is not valid base64 UTF-8)."""
    try:
        return base64.b64decode(blob.blob, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def resource_blocks(
    contents: list[TextResourceContents | BlobResourceContents],
) -> list[ContentBlock]:
    """A read resource's contents as tool-result blocks: text as text, images as images, text
    blobs decoded; other blobs stay blobs (a line saying what they were)."""
    blocks: list[ContentBlock] = []
    for item in contents:
        match item:
            case TextResourceContents(text=text):
                blocks.append(TextContent(type="text", text=text))
            case BlobResourceContents(mimeType=mime) if mime and mime.startswith("image/"):
                blocks.append(ImageContent(type="image", data=item.blob, mimeType=mime))
            case _:
                blocks.append(_block(EmbeddedResource(type="resource", resource=item)))
    return blocks


async def stored_media(store: AttachmentStore, tool: str, content: object) -> object:
    """``content`` with each base64 image block admitted into ``store`` as a reference."""
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and b.get("type") in ("image", "file") for b in content
    ):
        return content
    out: list[object] = []
    images = 0
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "image" and block.get("base64"):
            images += 1
            out.append(await _image(store, tool, block["base64"], images))
        elif kind == "image":
            out.append({"type": "text", "text": f"[image at {block.get('url', '?')}]"})
        elif kind == "file":
            size = len(block.get("base64") or "") * 3 // 4
            what = block.get("mime_type") or "binary data"
            where = f" at {block['url']}" if block.get("url") else ""
            out.append(
                {
                    "type": "text",
                    "text": f"[{what}{where}{f', {size:,} bytes' if size else ''}: not shown]",
                }
            )
        else:
            out.append(block)
    if not (isinstance(out[0], dict) and out[0].get("type") == "text"):
        out.insert(
            0,
            {
                "type": "text",
                "text": f"{tool} returned {images} image{'s' if images != 1 else ''}.",
            },
        )
    return out


async def _image(store: AttachmentStore, tool: str, encoded: str, number: int) -> dict[str, object]:
    try:
        data = base64.b64decode(encoded, validate=True)
        (att,) = await store.admit_async([Source.from_bytes(data, f"{tool}-{number}")])
    except (binascii.Error, ValueError, MediaError) as exc:
        return {"type": "text", "text": f"[an image from {tool} could not be attached: {exc}]"}
    return to_reference_block(att)
