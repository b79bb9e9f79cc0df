"""Errors of the media pipeline, and the reasons an image is refused.

Admission fails loudly and specifically: the user pasted a file and deserves to hear which one
was refused and why, in words they can act on ("too many pixels", "truncated"), never a
decoder's traceback. Every refusal therefore carries a :class:`RejectReason` that callers can
branch on and a human detail line that the UI can show as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RejectReason(StrEnum):
    """Why a source was not admitted. The values are stable: logs and tests match on them."""

    EMPTY = "empty"
    UNREADABLE = "unreadable"
    TOO_MANY_BYTES = "too_many_bytes"
    TOO_MANY_PIXELS = "too_many_pixels"
    SIDE_TOO_LONG = "side_too_long"
    DECOMPRESSION_BOMB = "decompression_bomb"
    TRUNCATED = "truncated"
    CORRUPT = "corrupt"
    UNSUPPORTED_TYPE = "unsupported_type"
    VIDEO_UNSUPPORTED = "video_unsupported"
    TOO_MANY_IMAGES = "too_many_images"
    MESSAGE_TOO_LARGE = "message_too_large"
    OUTPUT_INVALID = "output_invalid"


@dataclass(frozen=True, slots=True)
class Rejection:
    """One refused source: its display name, the reason and a sentence explaining it."""

    name: str
    reason: RejectReason
    detail: str

    def message(self) -> str:
        return f"{self.name}: {self.detail}"


class MediaError(Exception):
    """Base class of every error this package raises on purpose."""


class ImageRejected(MediaError):
    """A single source failed normalization; :class:`AdmissionError` wraps these per batch."""

    def __init__(self, rejection: Rejection) -> None:
        super().__init__(rejection.message())
        self.rejection = rejection


class AdmissionError(MediaError):
    """A batch was refused as a whole (all or nothing); lists every source that failed.

    ``name`` and ``reason`` describe the first failure so that the common single-file case
    reads naturally; ``rejections`` holds them all.
    """

    def __init__(self, rejections: tuple[Rejection, ...]) -> None:
        if not rejections:
            raise ValueError("AdmissionError needs at least one rejection")
        lines = "; ".join(r.message() for r in rejections)
        super().__init__(f"not admitted: {lines}")
        self.rejections = rejections
        self.name = rejections[0].name
        self.reason = rejections[0].reason


VIDEO_NOT_SUPPORTED_DETAIL = (
    "video input is not supported yet: sampled frames arrive in a later release"
)


class VideoNotSupportedError(MediaError):
    """A video was offered where only images are admitted (video sampling is not built yet)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name}: {VIDEO_NOT_SUPPORTED_DETAIL}")
        self.name = name


class AttachmentUnavailableError(MediaError):
    """A stored attachment is missing or no longer matches its digest.

    Request projection turns this into a text placeholder instead of failing the request.
    """

    def __init__(self, attachment_id: str, detail: str) -> None:
        super().__init__(f"attachment {attachment_id[:12]}: {detail}")
        self.attachment_id = attachment_id
        self.detail = detail
