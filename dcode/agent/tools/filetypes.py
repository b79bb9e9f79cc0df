"""What kind of file read_file was handed: text, an image, a video, an audio clip, a PDF, or
some other binary.

The extension table is explicit rather than ``mimetypes`` because the system MIME database maps
source files to media types (``.ts`` is MPEG transport stream there), and a TypeScript file must
read as text. The first bytes are the check: a ``.png`` that is really text reads as text, and a
file whose bytes are a known image, video, audio or PDF format is read as that whatever its name.
Only when the bytes are binary but say nothing known does the extension decide.
"""

from __future__ import annotations

import codecs
import mimetypes
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal, TypeAlias

from dcode.media.kinds import sniff_format

Kind: TypeAlias = Literal["text", "image", "video", "audio", "pdf", "binary"]

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
    ".3gp": "video/3gpp",
    ".3gpp": "video/3gpp",
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
    ".aif": "audio/aiff",
    # documents
    ".pdf": "application/pdf",
}

# What a recognised signature (dcode.media.kinds.sniff_format) is, as a kind and a MIME type.
_FORMATS: dict[str, tuple[Kind, str]] = {
    "PNG": ("image", "image/png"),
    "JPEG": ("image", "image/jpeg"),
    "GIF": ("image", "image/gif"),
    "WEBP": ("image", "image/webp"),
    "BMP": ("image", "image/bmp"),
    "TIFF": ("image", "image/tiff"),
    "ICO": ("image", "image/vnd.microsoft.icon"),
    "AVIF": ("image", "image/avif"),
    "HEIF": ("image", "image/heif"),
    "PSD": ("image", "image/vnd.adobe.photoshop"),
    "QOI": ("image", "image/qoi"),
    "JPEG2000": ("image", "image/jp2"),
    "MP4": ("video", "video/mp4"),
    "MOV": ("video", "video/quicktime"),
    "AVI": ("video", "video/x-msvideo"),
    "ASF": ("video", "video/x-ms-wmv"),
    "WEBM": ("video", "video/webm"),
    "MKV": ("video", "video/x-matroska"),
    "FLV": ("video", "video/x-flv"),
    "MPEG": ("video", "video/mpeg"),
    "MPEG-TS": ("video", "video/mp2t"),
    "M4A": ("audio", "audio/mp4"),
    "PDF": ("pdf", "application/pdf"),
}

# Audio containers kinds.py does not name (it only tells images from videos).
_AUDIO_SIGNATURES: tuple[tuple[bytes, bytes, str], ...] = (
    (b"ID3", b"", "audio/mpeg"),
    (b"fLaC", b"", "audio/flac"),
    (b"OggS", b"", "audio/ogg"),
    (b"RIFF", b"WAVE", "audio/wav"),
    (b"FORM", b"AIFF", "audio/aiff"),
    (b"FORM", b"AIFC", "audio/aiff"),
)

OCTET_STREAM = "application/octet-stream"
_CONTROL = bytes(set(range(0x20)) - set(b"\t\n\r\f\v\x1b"))
_PLAIN = bytes(set(range(256)) - set(_CONTROL))
"""Every byte but the C0 controls that do not occur in text (tabs, line ends and ESC do)."""
SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class FileType:
    kind: Kind
    mime: str


def media_type(path: str) -> str | None:
    """The MIME type when the extension names an image, video, audio or PDF file."""
    return _MEDIA.get(PurePath(path).suffix.lower())


def kind_of_mime(mime: str) -> Kind:
    if mime == "application/pdf":
        return "pdf"
    match mime.split("/", 1)[0]:
        case "image" | "video" | "audio" as major:
            return major
    return "binary"


def classify(path: str, head: bytes, *, complete: bool) -> FileType:
    """The file's type from its first bytes (``head``, all of it when ``complete``) and its name."""
    named = media_type(path)
    sniffed = _sniff(head)
    sample = head[:SNIFF_BYTES]
    # A signature of printable bytes ("BM", "GIF89a") may just be how a text begins; one
    # among control bytes is a binary file's. An uncompressed PDF can be all ASCII.
    if looks_like_text(sample, complete=complete and len(head) <= SNIFF_BYTES) and (
        sniffed is None or (sniffed.kind != "pdf" and not sample.translate(None, _PLAIN))
    ):
        return FileType("text", "text/plain")
    if sniffed is not None:
        if named is not None and kind_of_mime(named) == sniffed.kind:
            return FileType(sniffed.kind, named)  # the extension is the more precise name
        return sniffed
    if named is not None:
        return FileType(kind_of_mime(named), named)
    return FileType("binary", binary_type(path))


def _sniff(head: bytes) -> FileType | None:
    for magic, form, mime in _AUDIO_SIGNATURES:
        if head.startswith(magic) and head[8 : 8 + len(form)] == form:
            return FileType("audio", mime)
    name = sniff_format(head)
    if name in _FORMATS:
        kind, mime = _FORMATS[name]
        return FileType(kind, mime)
    return None


def looks_like_text(head: bytes, *, complete: bool) -> bool:
    """No NUL byte, and UTF-8 (a sequence cut at the end of an incomplete head is fine)."""
    if b"\0" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=complete)
    except UnicodeDecodeError:
        return False
    return True


def binary_type(path: str) -> str:
    """A best-effort MIME type for a file whose content proved binary."""
    known = media_type(path)
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path, strict=False)
    if guessed is None or guessed.startswith("text/"):
        return OCTET_STREAM
    return guessed
