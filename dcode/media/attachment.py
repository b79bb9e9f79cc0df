"""The normalized attachment as data, and the reference block that messages carry instead of bytes.

Principle 3: history holds references, bytes are projected per request. A checkpointed
message therefore holds a *reference block*: a small plain dict (a few hundred bytes, never
base64) naming the attachment by its content digest plus the facts a reader needs without
opening the store (type, size, alpha, the original's dimensions). The request projection
middleware replaces each block with route-sized bytes just before a model call.

Shape (``schema`` 1)::

    {"type": "image", "source_type": "dcode_attachment", "schema": 1,
     "attachment_id": "<64 hex sha256 of the normalized bytes>",
     "mime_type": "image/jpeg" | "image/png" | "image/webp",
     "width": 2730, "height": 1536, "bytes": 341179, "alpha": false,
     "passthrough": false, "name": "screenshot.png",
     "original": {"format": "PNG", "width": 3840, "height": 2160, "bytes": 224493}}

``"type": "image"`` keeps langchain's content-block handling (``content_blocks``, token
counting) treating it as an image; the unknown ``source_type`` makes sure no provider adapter
mistakes it for sendable data. This module imports nothing heavy (no Pillow), so middleware
and the UI can use it freely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeGuard, TypeVar

SOURCE_TYPE = "dcode_attachment"
SCHEMA_VERSION = 1
MAX_NAME_CHARS = 255
_ID_PATTERN = re.compile(r"[0-9a-f]{64}")
_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/webp"})
_T = TypeVar("_T")


class InvalidReferenceBlock(ValueError):
    """A dict that claims to be a dcode reference block but is malformed."""


@dataclass(frozen=True, slots=True)
class OriginalFacts:
    """What the user supplied, as displayed (EXIF orientation applied to the dimensions)."""

    format: str
    width: int
    height: int
    byte_size: int


@dataclass(frozen=True, slots=True)
class Attachment:
    """A normalized image in the store: 8-bit sRGB(A) JPEG, PNG (passthrough) or WebP.

    ``alpha`` is True only when some pixel is not fully opaque; ``passthrough`` when the
    stored bytes are the user's own, byte for byte.
    """

    id: str
    media_type: str
    width: int
    height: int
    byte_size: int
    alpha: bool
    name: str
    original: OriginalFacts
    passthrough: bool = False

    def __post_init__(self) -> None:
        if not is_attachment_id(self.id):
            raise ValueError(f"attachment id must be 64 lowercase hex digits, got {self.id!r}")
        if self.media_type not in _MEDIA_TYPES:
            raise ValueError(f"unexpected media type {self.media_type!r}")

    @property
    def extension(self) -> str:
        return {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp"}[self.media_type]

    @property
    def display_name(self) -> str:
        return self.name or self.id[:12]


def is_attachment_id(value: object) -> bool:
    """A sha256 hex digest: also what keeps ids from ever escaping the store's directory."""
    return isinstance(value, str) and _ID_PATTERN.fullmatch(value) is not None


def clip_name(name: str) -> str:
    """Display names are user-supplied; keep them one line and bounded so blocks stay small."""
    flat = " ".join(name.split())
    return flat if len(flat) <= MAX_NAME_CHARS else flat[: MAX_NAME_CHARS - 1] + "…"


def to_reference_block(att: Attachment) -> dict[str, object]:
    """The dict a message stores for ``att`` (JSON-serialisable, no bytes)."""
    return {
        "type": "image",
        "source_type": SOURCE_TYPE,
        "schema": SCHEMA_VERSION,
        "attachment_id": att.id,
        "mime_type": att.media_type,
        "width": att.width,
        "height": att.height,
        "bytes": att.byte_size,
        "alpha": att.alpha,
        "passthrough": att.passthrough,
        "name": att.name,
        "original": {
            "format": att.original.format,
            "width": att.original.width,
            "height": att.original.height,
            "bytes": att.original.byte_size,
        },
    }


def is_reference_block(block: object) -> TypeGuard[dict[str, object]]:
    """True for any dict that claims to be a dcode reference block (valid or not)."""
    return (
        isinstance(block, dict)
        and block.get("type") == "image"
        and block.get("source_type") == SOURCE_TYPE
    )


def from_reference_block(block: object) -> Attachment:
    """Rebuild the :class:`Attachment` a block refers to; raises :class:`InvalidReferenceBlock`."""
    if not is_reference_block(block):
        raise InvalidReferenceBlock("not a dcode attachment reference block")
    assert isinstance(block, dict)
    if block.get("schema") != SCHEMA_VERSION:
        raise InvalidReferenceBlock(f"unsupported reference schema {block.get('schema')!r}")
    original = block.get("original")
    if not isinstance(original, dict):
        raise InvalidReferenceBlock("reference block lacks its 'original' facts")
    try:
        return Attachment(
            id=_field(block, "attachment_id", str),
            media_type=_field(block, "mime_type", str),
            width=_positive(block, "width"),
            height=_positive(block, "height"),
            byte_size=_positive(block, "bytes"),
            alpha=_field(block, "alpha", bool),
            name=_field(block, "name", str),
            passthrough=_field(block, "passthrough", bool),
            original=OriginalFacts(
                format=_field(original, "format", str),
                width=_positive(original, "width"),
                height=_positive(original, "height"),
                byte_size=_positive(original, "bytes"),
            ),
        )
    except ValueError as exc:
        raise InvalidReferenceBlock(str(exc)) from exc


def _field(data: dict[str, object], key: str, kind: type[_T]) -> _T:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidReferenceBlock(f"reference block field {key!r} must be {kind.__name__}")
    return value


def _positive(data: dict[str, object], key: str) -> int:
    value = _field(data, key, int)
    if value <= 0:
        raise InvalidReferenceBlock(f"reference block field {key!r} must be > 0")
    return value
