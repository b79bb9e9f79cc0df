"""Non-image attachments (a PDF's pages, an audio clip, a video sent whole) and their reference blocks.

Images are normalized and re-encoded (``attachment``, ``store``); these files are kept byte for
byte, because a model that takes PDFs or audio wants the file itself. They live in the same
content-addressed store (``AttachmentStore.admit_file``), so history holds the same kind of small
reference and the request projection puts the bytes in, for that request only.

Shape (``schema`` 1)::

    {"type": "file", "kind": "file" | "audio" | "video", "source_type": "dcode_attachment",
     "schema": 1, "attachment_id": "<64 hex sha256 of the bytes>", "mime_type": "application/pdf",
     "bytes": 48213, "name": "docs/spec.pdf", "detail": "pages 1-5 of 12"}

``type`` is always ``file``: it is one of the block types langchain's tool layer keeps as a
list, where an ``audio`` or ``video`` block makes the tool node turn the whole result into a
JSON string that no later step can read. ``kind`` says what the file is. A block whose ``type``
is ``audio`` or ``video`` (and no ``kind``) is read as that kind.

``name`` is the path the model asked for, as read_file showed it: a placeholder names it, and
read_file on it opens the file again. ``detail`` is optional (which pages a PDF block holds).
This module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeGuard

from dcode.media.attachment import (
    SCHEMA_VERSION,
    SOURCE_TYPE,
    InvalidReferenceBlock,
    clip_name,
    is_attachment_id,
)

FileKind = Literal["file", "audio", "video"]
FILE_KINDS: tuple[FileKind, ...] = ("file", "audio", "video")

_EXTENSIONS = {
    "application/pdf": "pdf",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mpeg": "mp3",
    "audio/flac": "flac",
    "audio/ogg": "ogg",
    "audio/aac": "aac",
    "audio/aiff": "aiff",
    "audio/mp4": "m4a",
    "audio/opus": "opus",
    "video/mp4": "mp4",
    "video/webm": "webm",
    "video/quicktime": "mov",
    "video/x-matroska": "mkv",
    "video/x-msvideo": "avi",
    "video/mpeg": "mpg",
}


@dataclass(frozen=True, slots=True)
class FileAttachment:
    """Stored bytes of a non-image file, named by their sha256."""

    id: str
    kind: FileKind
    media_type: str
    byte_size: int
    name: str
    detail: str = ""

    def __post_init__(self) -> None:
        if not is_attachment_id(self.id):
            raise ValueError(f"attachment id must be 64 lowercase hex digits, got {self.id!r}")
        if self.kind not in FILE_KINDS:
            raise ValueError(f"unexpected file attachment kind {self.kind!r}")
        if "/" not in self.media_type:
            raise ValueError(f"unexpected media type {self.media_type!r}")

    @property
    def extension(self) -> str:
        return _EXTENSIONS.get(self.media_type, "bin")

    @property
    def display_name(self) -> str:
        return self.name or self.id[:12]


def to_file_reference_block(att: FileAttachment) -> dict[str, object]:
    """The dict a message stores for ``att`` (JSON-serialisable, no bytes)."""
    block: dict[str, object] = {
        "type": "file",
        "kind": att.kind,
        "source_type": SOURCE_TYPE,
        "schema": SCHEMA_VERSION,
        "attachment_id": att.id,
        "mime_type": att.media_type,
        "bytes": att.byte_size,
        "name": att.name,
    }
    if att.detail:
        block["detail"] = att.detail
    return block


def is_file_reference_block(block: object) -> TypeGuard[dict[str, object]]:
    """True for any dict that claims to be a dcode file reference block (valid or not)."""
    return (
        isinstance(block, dict)
        and block.get("type") in FILE_KINDS
        and block.get("source_type") == SOURCE_TYPE
    )


def from_file_reference_block(block: object) -> FileAttachment:
    """Rebuild the :class:`FileAttachment` a block refers to; raises :class:`InvalidReferenceBlock`."""
    if not is_file_reference_block(block):
        raise InvalidReferenceBlock("not a dcode file reference block")
    assert isinstance(block, dict)
    if block.get("schema") != SCHEMA_VERSION:
        raise InvalidReferenceBlock(f"unsupported reference schema {block.get('schema')!r}")
    size = block.get("bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise InvalidReferenceBlock("reference block field 'bytes' must be a positive int")
    try:
        return FileAttachment(
            id=_text(block, "attachment_id"),
            kind=file_kind(block),
            media_type=_text(block, "mime_type"),
            byte_size=size,
            name=clip_name(_text(block, "name")),
            detail=str(block.get("detail") or ""),
        )
    except ValueError as exc:
        raise InvalidReferenceBlock(str(exc)) from exc


def file_kind(block: dict[str, object]) -> FileKind:
    """What a file reference block holds: its ``kind``, or its ``type`` when that names it."""
    kind = block.get("kind", "file") if block.get("type") == "file" else block.get("type")
    if kind not in FILE_KINDS:
        raise InvalidReferenceBlock(
            f"reference block field 'kind' must be one of {', '.join(FILE_KINDS)}"
        )
    return kind


def _text(block: dict[str, object], key: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise InvalidReferenceBlock(f"reference block field {key!r} must be str")
    return value
