"""Telling text from binary before read_file prints a file.

The extension table is explicit rather than ``mimetypes`` because the system MIME database maps
source files to media types (``.ts`` is MPEG transport stream there), and a TypeScript file must
read as text. Content decides for everything not in the table.
"""

from __future__ import annotations

import mimetypes
from pathlib import PurePath

_MEDIA: dict[str, str] = {
    # images
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".ico": "image/vnd.microsoft.icon",
    ".heic": "image/heic",
    ".heif": "image/heif",
    ".avif": "image/avif",
    # video
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".avi": "video/x-msvideo",
    ".mkv": "video/x-matroska",
    ".webm": "video/webm",
    ".wmv": "video/x-ms-wmv",
    ".flv": "video/x-flv",
    ".mpg": "video/mpeg",
    ".mpeg": "video/mpeg",
    # audio
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/opus",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    ".aiff": "audio/aiff",
    # documents
    ".pdf": "application/pdf",
}

OCTET_STREAM = "application/octet-stream"
SNIFF_BYTES = 8192


def media_type(path: str) -> str | None:
    """The MIME type when the extension names an image, video, audio or PDF file."""
    return _MEDIA.get(PurePath(path).suffix.lower())


def binary_type(path: str) -> str:
    """A best-effort MIME type for a file whose content proved binary."""
    known = media_type(path)
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path, strict=False)
    if guessed is None or guessed.startswith("text/"):
        return OCTET_STREAM
    return guessed


def decode_text(data: bytes) -> str | None:
    """The text of ``data``, or ``None`` when it is binary (a NUL byte, or not UTF-8)."""
    if b"\0" in data[:SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
