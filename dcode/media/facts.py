"""Header-only facts about an encoded image, and the check that they are what we promised.

Two places need to trust bytes without paying for a decode: the normalizer, before a digest
becomes an attachment id, and the variant cache, on every hit. Both re-open the bytes lazily
(Pillow parses headers only until ``load``) and compare format, size, mode and bit depth with
the expected facts. Pillow reports a 16-bit PNG as plain ``RGB``, so PNG bit depth is read
from the IHDR chunk directly.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image

OUTPUT_FORMATS = ("JPEG", "PNG", "WEBP")
MEDIA_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}
EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}
FORMAT_OF_MEDIA_TYPE = {v: k for k, v in MEDIA_TYPES.items()}


class FactsMismatch(ValueError):
    """Encoded bytes are unreadable or differ from the facts they were expected to have."""


@dataclass(frozen=True, slots=True)
class EncodedFacts:
    format: str
    width: int
    height: int
    mode: str
    bit_depth: int
    byte_size: int

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]


def probe(data: bytes) -> EncodedFacts:
    """Read the facts of an output-format image from its header, without decoding pixels."""
    try:
        with Image.open(io.BytesIO(data), formats=OUTPUT_FORMATS) as im:
            fmt, (width, height), mode = im.format or "", im.size, im.mode
    except Exception as exc:  # any decoder complaint means "not our output"
        raise FactsMismatch(f"unreadable header ({type(exc).__name__}: {exc})") from exc
    depth = _png_bit_depth(data) if fmt == "PNG" else 8
    return EncodedFacts(fmt, width, height, mode, depth, len(data))


def check_output(
    data: bytes,
    *,
    fmt: str,
    width: int,
    height: int,
    alpha: bool,
    max_bytes: int | None,
) -> EncodedFacts:
    """Probe ``data`` and raise :class:`FactsMismatch` unless it is exactly what was expected:
    the format, the size, 8 bits per channel, ``RGBA`` iff ``alpha`` (``RGB`` otherwise) and,
    when given, at most ``max_bytes``."""
    facts = probe(data)
    expected_mode = "RGBA" if alpha else "RGB"
    problems = [
        f"format {facts.format} != {fmt}" if facts.format != fmt else "",
        f"size {facts.width}x{facts.height} != {width}x{height}"
        if (facts.width, facts.height) != (width, height)
        else "",
        f"mode {facts.mode} != {expected_mode}" if facts.mode != expected_mode else "",
        f"{facts.bit_depth}-bit samples" if facts.bit_depth != 8 else "",
        f"{facts.byte_size} bytes > {max_bytes}"
        if max_bytes is not None and facts.byte_size > max_bytes
        else "",
    ]
    found = [p for p in problems if p]
    if found:
        raise FactsMismatch("; ".join(found))
    return facts


def _png_bit_depth(data: bytes) -> int:
    # Signature (8) + IHDR length (4) + "IHDR" (4) + width (4) + height (4), then bit depth.
    if len(data) < 25 or data[12:16] != b"IHDR":
        return 0
    return data[24]
