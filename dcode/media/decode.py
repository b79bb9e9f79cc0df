"""Opening untrusted image bytes safely: allow-listed decoders, limits before pixels.

The order is the defence:
1. ``Image.open`` with an explicit ``formats=`` allow-list, so exotic decoders (FITS, PSD,
   EPS…) never see user bytes. ``open`` is lazy: it parses headers only.
2. The header's size is checked against dcode's own pixel and side limits *before* any
   pixel is decoded. Pillow's global ``MAX_IMAGE_PIXELS`` is left alone (other code in the
   process may rely on it); its ``DecompressionBombError`` is mapped to a clear reason for
   the headers that are too absurd for Pillow to even finish opening.
3. One full decode (``load``) with ``LOAD_TRUNCATED_IMAGES`` left False, so a truncated or
   corrupt stream is refused instead of padded with grey.
4. The size is checked again after decoding, because a container can disagree with its
   payload (an ICO entry's PNG may be larger than the directory claims).

GIFs get one more header-level check: every frame's declared extents (``gif_frames``), since
only frame 0 is decoded but a later frame can declare a canvas of billions of pixels.

JPEG sources bigger than their normalized target are decoded with ``draft``: libjpeg scales
the DCT by 1/2, 1/4 or 1/8 while it decodes, so the whole stream is still read and checked
but a 50 MP photo never exists in memory at full size.

Decoders raise a zoo of exception types on malformed input (OSError, SyntaxError, ValueError,
struct.error, TypeError…). The broad ``except Exception`` clauses below are deliberate and
confined to the calls into Pillow: every one of them becomes a :class:`Rejection`.
"""

from __future__ import annotations

import importlib
import io

from PIL import Image, ImageFile, UnidentifiedImageError

from dcode.media.errors import ImageRejected, Rejection, RejectReason
from dcode.media.gif_frames import frame_extents
from dcode.media.kinds import sniff_format
from dcode.media.limits import AdmissionLimits
from dcode.media.png_chunks import without_broken_chunks

_WANTED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF", "ICO", "AVIF")
_PLUGINS = ("Png", "Jpeg", "WebP", "Gif", "Bmp", "Tiff", "Ico", "Avif")


def _available_formats() -> tuple[str, ...]:
    """Registers only the wanted decoders: ``Image.init()`` would import all forty-odd plugins
    (a fifth of a cold ``dcode media inspect``), and once these are registered ``Image.open``
    with this allow-list never needs it."""
    for plugin in _PLUGINS:
        try:
            importlib.import_module(f"PIL.{plugin}ImagePlugin")
        except ImportError:  # a Pillow built without it (AVIF before 11.2)
            continue
    return tuple(f for f in _WANTED_FORMATS if f in Image.OPEN)


ALLOWED_FORMATS = _available_formats()
"""Decoders admission may use; AVIF only when this Pillow build has it."""

_JPEG_FAMILY = frozenset({"JPEG", "MPO"})


def reject(name: str, reason: RejectReason, detail: str) -> ImageRejected:
    return ImageRejected(Rejection(name, reason, detail))


def open_checked(data: bytes, name: str, limits: AdmissionLimits) -> Image.Image:
    """Open lazily with the allow-list and enforce the source limits from the header alone."""
    try:
        im = Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS)
    except Image.DecompressionBombError as exc:
        raise reject(
            name,
            RejectReason.DECOMPRESSION_BOMB,
            f"decompression bomb: the header declares far more than "
            f"{limits.max_source_pixels:,} pixels",
        ) from exc
    except UnidentifiedImageError as exc:
        repair = without_broken_chunks(data)
        if repair is None:
            raise _unidentified(name, data) from exc
        if repair.data is None:
            raise reject(name, RejectReason.CORRUPT, f"corrupt PNG: {repair.problem}") from exc
        return open_checked(
            repair.data, name, limits
        )  # without the optional chunks that are broken
    except Exception as exc:  # see module docstring
        raise _open_failure(name, exc) from exc
    try:
        check_dimensions(name, im.size, limits)
        if im.format == "GIF":
            _check_gif_frames(name, data, im.size, limits)
    except ImageRejected:
        im.close()
        raise
    return im


def _check_gif_frames(
    name: str, data: bytes, size: tuple[int, int], limits: AdmissionLimits
) -> None:
    """Refuse a GIF whose frames, together, declare a canvas beyond the source limits."""
    right, bottom = size
    for frame_right, frame_bottom in frame_extents(data):
        right, bottom = max(right, frame_right), max(bottom, frame_bottom)
    if max(right, bottom) > limits.max_source_side or right * bottom > limits.max_source_pixels:
        raise reject(
            name,
            RejectReason.DECOMPRESSION_BOMB,
            f"decompression bomb: its frames declare a {right}x{bottom} canvas, beyond "
            f"{limits.max_source_side} px per side or {limits.max_source_pixels:,} pixels",
        )


def check_dimensions(name: str, size: tuple[int, int], limits: AdmissionLimits) -> None:
    width, height = size
    if width <= 0 or height <= 0:
        raise reject(name, RejectReason.CORRUPT, f"invalid dimensions {width}x{height}")
    if max(width, height) > limits.max_source_side:
        raise reject(
            name,
            RejectReason.SIDE_TOO_LONG,
            f"side too long: {width}x{height} exceeds {limits.max_source_side} px per side",
        )
    if width * height > limits.max_source_pixels:
        raise reject(
            name,
            RejectReason.TOO_MANY_PIXELS,
            f"too many pixels: {width}x{height} = {width * height:,} exceeds "
            f"{limits.max_source_pixels:,}",
        )


def load_checked(
    im: Image.Image, name: str, limits: AdmissionLimits, draft_to: tuple[int, int] | None
) -> None:
    """Decode the first frame fully (optionally DCT-scaled for JPEG), then re-check limits."""
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        # A process-wide Pillow switch that something else flipped: decoding now would pad
        # truncated files with grey instead of failing. Refuse loudly rather than admit that.
        raise reject(
            name,
            RejectReason.CORRUPT,
            "refusing to decode: PIL.ImageFile.LOAD_TRUNCATED_IMAGES is enabled in this process",
        )
    if draft_to is not None and im.format in _JPEG_FAMILY:
        try:
            im.draft(None, draft_to)
        except Exception as exc:  # see module docstring
            raise reject(name, RejectReason.CORRUPT, f"corrupt JPEG header: {exc}") from exc
    try:
        im.load()
    except Image.DecompressionBombError as exc:
        raise reject(name, RejectReason.DECOMPRESSION_BOMB, f"decompression bomb: {exc}") from exc
    except Exception as exc:  # see module docstring
        raise _load_failure(name, im.format or "image", exc) from exc
    check_dimensions(name, im.size, limits)


def _unidentified(name: str, data: bytes) -> ImageRejected:
    sniffed = sniff_format(data[:376])
    if sniffed in ALLOWED_FORMATS:
        return reject(name, RejectReason.CORRUPT, f"corrupt {sniffed}: its header cannot be read")
    if sniffed is not None:
        return reject(
            name, RejectReason.UNSUPPORTED_TYPE, f"unsupported type: {sniffed} is not accepted"
        )
    accepted = ", ".join(ALLOWED_FORMATS)
    return reject(name, RejectReason.UNSUPPORTED_TYPE, f"unsupported type: not a {accepted} image")


def _open_failure(name: str, exc: Exception) -> ImageRejected:
    text = str(exc)
    if "Decompressed data too large" in text:
        return reject(name, RejectReason.DECOMPRESSION_BOMB, f"decompression bomb: {text}")
    if "nsupported" in text or "not supported" in text:
        return reject(name, RejectReason.UNSUPPORTED_TYPE, f"unsupported variant: {text}")
    return reject(name, RejectReason.CORRUPT, f"corrupt header ({type(exc).__name__}: {text})")


def _load_failure(name: str, fmt: str, exc: Exception) -> ImageRejected:
    text = str(exc)
    if "runcated" in text:
        return reject(name, RejectReason.TRUNCATED, f"truncated {fmt}: {text}")
    if "Decompressed data too large" in text:
        return reject(name, RejectReason.DECOMPRESSION_BOMB, f"decompression bomb: {text}")
    return reject(name, RejectReason.CORRUPT, f"corrupt {fmt} data ({type(exc).__name__}: {text})")
