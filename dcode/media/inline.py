"""What an inline media block carries: its bytes (a base64 field or a ``data:`` URL), or the
remote URL it points at (pure).

dcode's own history holds reference blocks, never bytes; but a block some other tool returned
can carry its payload inline, in any of the shapes langchain and OpenAI use (``modality``
recognises the same ones): ``{"type": "image", "base64": …}``, the older
``{"source_type": "base64", "data": …}``, a ``url`` that is a data URL, an ``image_url`` part,
``input_audio``'s ``data`` and ``format``, a ``file`` part's ``file_data``. Whoever needs those
bytes on disk (the summary's media tags) asks here, then stores them.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes


@dataclass(frozen=True, slots=True)
class Inline:
    """Bytes a block carries, and their MIME type ('' when the block does not say)."""

    data: bytes
    mime_type: str


@dataclass(frozen=True, slots=True)
class Remote:
    """A block that names its content by an http(s) URL, which is kept as it is."""

    url: str


def payload(block: dict[str, object]) -> Inline | Remote | None:
    """The block's inline bytes or remote URL; None when it carries neither (a provider's file
    id, say). Raises ``ValueError`` when the payload is there but does not decode."""
    mime = str(block.get("mime_type") or "")
    if isinstance(data := block.get("base64"), str):
        return Inline(_b64(data), mime)
    if block.get("source_type") == "base64" and isinstance(data := block.get("data"), str):
        return Inline(_b64(data), mime)
    match block.get("type"):
        case "image_url":
            inner = block.get("image_url")
            return _url(inner.get("url") if isinstance(inner, dict) else inner, mime)
        case "input_image":
            return _url(block.get("image_url"), mime)
        case "input_audio":
            inner = block.get("input_audio")
            if isinstance(inner, dict) and isinstance(inner.get("data"), str):
                fmt = inner.get("format")
                return Inline(
                    _b64(inner["data"]), f"audio/{fmt}" if isinstance(fmt, str) and fmt else mime
                )
            return None
        case "file" | "input_file" if not isinstance(block.get("url"), str):
            file = block.get("file")
            inner = file if isinstance(file, dict) else block
            return _url(inner.get("file_data"), mime)
    return _url(block.get("url"), mime)


def _url(url: object, mime: str) -> Inline | Remote | None:
    if not isinstance(url, str):
        return None
    if url.startswith("data:"):
        return _data_url(url, mime)
    if url.startswith(("https://", "http://")):
        return Remote(url)
    return None


def _data_url(url: str, fallback: str) -> Inline:
    """``data:[<mime>][;base64],<data>``: base64 or percent-encoded (an inline SVG)."""
    head, sep, body = url[5:].partition(",")
    if not sep:
        raise ValueError("a data URL without data")
    params = head.split(";")
    mime = params[0] or fallback
    if "base64" in params[1:]:
        return Inline(_b64(body), mime)
    return Inline(unquote_to_bytes(body), mime)


def _b64(text: str) -> bytes:
    try:
        data = base64.b64decode(
            "".join(text.split()), validate=True
        )  # MIME-style line breaks allowed
    except binascii.Error as exc:
        raise ValueError(f"not base64: {exc}") from exc
    if not data:
        raise ValueError("no bytes")
    return data
