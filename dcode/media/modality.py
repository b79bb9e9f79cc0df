"""Which modality a content block carries: image, audio, video, pdf or another file (pure).

A request can hold media in two shapes: dcode's reference blocks (``attachment``,
``file_attachment``), which history stores, and the standard blocks langchain knows
(``{"type": "image", "base64": …}``, an OpenAI ``image_url`` part, …), which some other tool may
return. Capability scrubbing and placement ask the same questions of both: what kind of content
is this, under what name and MIME type. Text blocks, and anything that is not a dict, carry no
modality.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dcode.media.attachment import SOURCE_TYPE

Modality = Literal["image", "audio", "video", "pdf", "file"]

PDF_MIME = "application/pdf"
UNNAMED = "(unnamed)"

_STANDARD: dict[str, Modality] = {
    "image": "image",
    "audio": "audio",
    "video": "video",
    "file": "file",
}
_OPENAI: dict[str, Modality] = {
    "image_url": "image",
    "input_image": "image",
    "input_audio": "audio",
    "input_file": "file",
}


@dataclass(frozen=True, slots=True)
class MediaPart:
    """What a placeholder says of one block: its modality, name and MIME type."""

    modality: Modality
    name: str
    mime_type: str
    reference: bool


def media_part(block: object) -> MediaPart | None:
    """The media a block carries, or None for text and anything unknown."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind in _STANDARD:
        reference = block.get("source_type") == SOURCE_TYPE
        if reference and kind == "file" and block.get("kind") in ("audio", "video"):
            kind = block["kind"]  # a stored audio clip or video travels as a file block
        mime = _original_mime(block) or str(
            block.get("mime_type") or _data_url_mime(block.get("url")) or _default_mime(kind)
        )
        return MediaPart(_refine(_STANDARD[kind], mime), _name(block), mime, reference)
    if kind in _OPENAI:
        mime = _openai_mime(block) or _default_mime(_OPENAI[kind])
        return MediaPart(_refine(_OPENAI[kind], mime), _name(block), mime, False)
    return None


def has_media(blocks: list[object]) -> bool:
    return any(media_part(block) is not None for block in blocks)


def _refine(modality: Modality, mime: str) -> Modality:
    if modality == "file" and mime == PDF_MIME:
        return "pdf"
    return modality


def _name(block: dict[str, object]) -> str:
    for key in ("name", "filename"):
        name = block.get(key)
        if isinstance(name, str) and name:
            return name
    nested = block.get("file")
    name = nested.get("filename") if isinstance(nested, dict) else None
    if isinstance(name, str) and name:
        return name
    attachment_id = block.get("attachment_id")
    return str(attachment_id)[:12] if isinstance(attachment_id, str) and attachment_id else UNNAMED


def _original_mime(block: dict[str, object]) -> str | None:
    """An image reference names the file's own format (the stored copy may be re-encoded)."""
    original = block.get("original")
    fmt = original.get("format") if isinstance(original, dict) else None
    return f"image/{fmt.lower()}" if isinstance(fmt, str) and fmt.isalnum() else None


def _openai_mime(block: dict[str, object]) -> str | None:
    kind = block["type"]
    if kind == "image_url":
        inner = block.get("image_url")
        return _data_url_mime(inner.get("url") if isinstance(inner, dict) else inner)
    if kind == "input_image":
        return _data_url_mime(block.get("image_url"))
    if kind == "input_audio":
        inner = block.get("input_audio")
        fmt = inner.get("format") if isinstance(inner, dict) else None
        return f"audio/{fmt}" if isinstance(fmt, str) and fmt else None
    file = block.get("file")
    inner = file if isinstance(file, dict) else block
    return _data_url_mime(inner.get("file_data"))


def _data_url_mime(url: object) -> str | None:
    if isinstance(url, str) and url.startswith("data:"):
        head = url[5:].split(",", 1)[0]
        return head.split(";", 1)[0] or None
    return None


def _default_mime(modality: str) -> str:
    return {"image": "image/*", "audio": "audio/*", "video": "video/*"}.get(
        modality, "application/octet-stream"
    )
