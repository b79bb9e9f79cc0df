"""Is this file an image, a video, or neither? Decided by magic bytes first, extension second.

The input box calls this on every pasted or dropped path, so it must be cheap and must not
import Pillow (fast start): it reads a few hundred bytes at most. Content wins over the name because
screenshots get renamed and downloads lose their extensions; the extension only decides when
the bytes say nothing we recognise.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, TypeAlias

from dcode.media.errors import VideoNotSupportedError
from dcode.regular_files import open_regular

MediaKind: TypeAlias = Literal["image", "video"]


def media_label(kind: str, number: int) -> str:
    """How a prompt names the media pasted into it: ``[image 1]``."""
    return f"[{kind} {number}]"


def labels_in(text: str, kind: str) -> int:
    """How many pasted ``kind`` media ``text`` names by their label."""
    return len(re.findall(rf"\[{re.escape(kind)} \d+\]", text))


# Enough to see two MPEG-TS sync bytes (one packet is 188 bytes); everything else needs 64.
_HEAD_BYTES = 2 * 188

IMAGE_EXTENSIONS = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".jpe",
        ".jfif",
        ".gif",
        ".webp",
        ".bmp",
        ".dib",
        ".tif",
        ".tiff",
        ".ico",
        ".avif",
        ".heic",
        ".heif",
    }
)
VIDEO_EXTENSIONS = frozenset(
    {
        ".mp4",
        ".m4v",
        ".mov",
        ".qt",
        ".mkv",
        ".webm",
        ".avi",
        ".wmv",
        ".asf",
        ".flv",
        ".mpg",
        ".mpeg",
        # not ".ts": in a code base that is TypeScript; real MPEG-TS is caught by its sync bytes
        ".m2ts",
        ".mts",
        ".3gp",
        ".3g2",
        ".ogv",
    }
)

# ISO-BMFF brands that mean a still image (AVIF/HEIF); any other ftyp is a movie unless it is
# one of the audio-only brands.
_IMAGE_BRANDS = frozenset(
    {b"avif", b"avis", b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1"}
)
_AUDIO_BRANDS = frozenset({b"M4A ", b"M4B ", b"M4P ", b"F4A ", b"F4B "})
_ASF_GUID = bytes.fromhex("3026B2758E66CF11A6D900AA0062CE6C")


# (offset, magic, name) for the containers recognisable by a fixed signature; the ones that
# need a second look (RIFF, ISO-BMFF, EBML, TS, SVG) are handled in ``sniff_format``.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "PNG"),
    (0, b"\xff\xd8\xff", "JPEG"),
    (0, b"GIF87a", "GIF"),
    (0, b"GIF89a", "GIF"),
    (0, b"BM", "BMP"),
    (0, b"II*\x00", "TIFF"),
    (0, b"MM\x00*", "TIFF"),
    (0, b"II+\x00", "TIFF"),
    (0, b"MM\x00+", "TIFF"),
    (0, b"\x00\x00\x01\x00", "ICO"),
    (0, b"\x00\x00\x02\x00", "ICO"),
    (0, _ASF_GUID, "ASF"),
    (0, b"FLV\x01", "FLV"),
    (0, b"\x00\x00\x01\xba", "MPEG"),
    (0, b"\x00\x00\x01\xb3", "MPEG"),
    (0, b"8BPS", "PSD"),
    (0, b"%PDF", "PDF"),
    (0, b"qoif", "QOI"),
    (0, b"\x00\x00\x00\x0cjP  ", "JPEG2000"),
    (0, b"\xff\x4f\xff\x51", "JPEG2000"),
    (4, b"moov", "MOV"),
    (4, b"mdat", "MOV"),
    (4, b"wide", "MOV"),
    (4, b"free", "MOV"),
    (4, b"skip", "MOV"),
)


def sniff_format(head: bytes) -> str | None:
    """Name the container in the first bytes of a file (``PNG``, ``MP4``, ``PSD``…), if known.

    Used for clear refusals ("PSD is not a supported image type") without handing the bytes
    to an exotic decoder just to learn its name.
    """
    match head[:4], head[4:8], head[8:12]:
        case b"RIFF", _, b"WEBP":
            return "WEBP"
        case b"RIFF", _, b"AVI ":
            return "AVI"
        case _, b"ftyp", brand:
            return _ftyp_name(brand)
        case b"\x1a\x45\xdf\xa3", _, _:
            return "WEBM" if b"webm" in head else "MKV"
        case _:
            pass
    for offset, magic, name in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return name
    if len(head) > 188 and head[0] == 0x47 and head[188] == 0x47:
        return "MPEG-TS"
    if head.lstrip().startswith((b"<svg", b"<?xml")) and b"<svg" in head:
        return "SVG"
    return None


_IMAGE_FORMATS = frozenset(
    {
        "PNG",
        "JPEG",
        "GIF",
        "WEBP",
        "BMP",
        "TIFF",
        "ICO",
        "AVIF",
        "HEIF",
        "PSD",
        "QOI",
        "JPEG2000",
        "SVG",
    }
)
_VIDEO_FORMATS = frozenset({"MP4", "MOV", "AVI", "ASF", "WEBM", "MKV", "FLV", "MPEG", "MPEG-TS"})


def _ftyp_name(brand: bytes) -> str | None:
    if brand in _IMAGE_BRANDS:
        return "AVIF" if brand in (b"avif", b"avis") else "HEIF"
    if brand in _AUDIO_BRANDS:
        return "M4A"
    return "MOV" if brand == b"qt  " else "MP4"


def sniff_kind(head: bytes) -> MediaKind | None:
    """``image`` or ``video`` from magic bytes alone, or None when they are not recognised."""
    name = sniff_format(head)
    if name in _IMAGE_FORMATS:
        return "image"
    if name in _VIDEO_FORMATS:
        return "video"
    return None


def detect_media_kind(path: Path | str) -> MediaKind | None:
    """Classify a file for the input box: by content when recognisable, else by extension.

    Returns None for directories, unreadable paths and everything that is neither an image
    nor a video (text, PDF, audio…), so that the caller can treat the paste as plain text.
    """
    p = Path(path)
    try:
        with open_regular(p) as fh:  # a named pipe or a device is no media file (and would block)
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return None
    kind = sniff_kind(head)
    if kind is not None:
        return kind
    if sniff_format(head) is not None:
        return None  # recognised as something else (PDF, audio-only MP4…): trust the bytes
    suffix = p.suffix.lower()
    if suffix in IMAGE_EXTENSIONS:
        return "image"
    if suffix in VIDEO_EXTENSIONS:
        return "video"
    return None


def require_not_video(path: Path | str, name: str | None = None) -> None:
    """Raise :class:`VideoNotSupportedError` for a video, so callers refuse it by type."""
    if detect_media_kind(path) == "video":
        raise VideoNotSupportedError(name or Path(path).name)
