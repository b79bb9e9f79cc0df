"""An MCP tool's result as dcode keeps it: text as text, images admitted into the attachment
store (history holds a reference; each request carries the variant sized for the route), other
binary content as a line saying what it was.

The adapter has already turned the MCP content into LangChain blocks (``TextContent`` and text
resources into text, images and image blobs into base64 image blocks, other blobs into file
blocks). The result keeps the shape media results share: a text block first, then the rest.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from dcode.media.attachment import to_reference_block
from dcode.media.errors import MediaError
from dcode.media.store import AttachmentStore, Source


async def stored_media(store: AttachmentStore, tool: str, content: Any) -> Any:
    """``content`` with each base64 image block admitted into ``store`` as a reference."""
    if not isinstance(content, list) or not any(isinstance(b, dict) and b.get("type") in ("image", "file") for b in content):
        return content
    out: list[Any] = []
    images = 0
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "image" and block.get("base64"):
            images += 1
            out.append(await _image(store, tool, block, images))
        elif kind == "image":
            out.append({"type": "text", "text": f"[image at {block.get('url', '?')}]"})
        elif kind == "file":
            size = len(block.get("base64") or "") * 3 // 4
            what = block.get("mime_type") or "binary data"
            where = f" at {block['url']}" if block.get("url") else ""
            out.append({"type": "text", "text": f"[{what}{where}{f', {size:,} bytes' if size else ''}: not shown]"})
        else:
            out.append(block)
    if not (isinstance(out[0], dict) and out[0].get("type") == "text"):
        out.insert(0, {"type": "text", "text": f"{tool} returned {images} image{'s' if images != 1 else ''}."})
    return out


async def _image(store: AttachmentStore, tool: str, block: dict[str, Any], number: int) -> dict[str, Any]:
    try:
        data = base64.b64decode(block["base64"], validate=True)
        (att,) = await store.admit_async([Source.from_bytes(data, f"{tool}-{number}")])
    except (binascii.Error, ValueError, MediaError) as exc:
        return {"type": "text", "text": f"[an image from {tool} could not be attached: {exc}]"}
    return to_reference_block(att)
