"""Shared helpers for the media tests (no tests here): Pillow's images in the corpus, and
image makers.

The corpus of real files lives beside the project (``tests/support/corpus.py``); tests that
need it skip with a clear reason when it is absent, so a bare checkout still runs the rest.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

from PIL import Image

from tests.support import corpus

PROJECT_ROOT = Path(__file__).resolve().parents[1]

requires_corpus = corpus.requires_corpus(corpus.PILLOW)


def corpus_file(name: str) -> Path:
    """One of Pillow's images (``apng/mode_16bit.png``), or a skip."""
    return corpus.corpus_file(corpus.PILLOW / name)


def corpus_files() -> list[Path]:
    """Every one of Pillow's images (none when the corpus is absent)."""
    if not corpus.PILLOW.is_dir():
        return []
    return sorted(p for p in corpus.PILLOW.rglob("*") if p.is_file() and p.name != "LICENSE")


def encode(im: Image.Image, fmt: str, **params: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **params)
    return buf.getvalue()


def noise(size: tuple[int, int], mode: str = "RGB", seed: int = 7) -> Image.Image:
    """Incompressible pixels: the worst case for every byte budget."""
    rnd = random.Random(seed)
    bands = len(mode)
    return Image.frombytes(mode, size, rnd.randbytes(size[0] * size[1] * bands))


def gradient(size: tuple[int, int]) -> Image.Image:
    """A smooth, compressible, orientation-revealing RGB test card: red grows to the right,
    green grows downwards."""
    vertical = Image.linear_gradient("L")
    horizontal = vertical.transpose(Image.Transpose.TRANSPOSE)
    red = horizontal.resize(size, Image.Resampling.BILINEAR)
    green = vertical.resize(size, Image.Resampling.BILINEAR)
    return Image.merge("RGB", (red, green, Image.new("L", size, 128)))


def opened(data: bytes) -> Image.Image:
    """Fully decode ``data`` (tests re-verify outputs by really decoding them)."""
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def _s15f16(value: float) -> bytes:
    return round(value * 65536).to_bytes(4, "big", signed=True)


def _xyz_tag(x: float, y: float, z: float) -> bytes:
    return b"XYZ " + bytes(4) + _s15f16(x) + _s15f16(y) + _s15f16(z)


def _desc_tag(text: str) -> bytes:
    ascii_text = text.encode("ascii") + b"\x00"
    body = b"desc" + bytes(4) + len(ascii_text).to_bytes(4, "big") + ascii_text
    return body + bytes(4) + bytes(4) + bytes(2) + bytes(1) + bytes(67)


def matrix_profile(
    description: str,
    red: tuple[float, float, float],
    green: tuple[float, float, float],
    blue: tuple[float, float, float],
    gamma: float = 2.2,
) -> bytes:
    """A minimal ICC v2 RGB display profile (matrix + gamma curves), built byte by byte.

    Pillow can only *create* sRGB/LAB/XYZ profiles, so tests that need a foreign RGB space
    (Display P3 here) assemble one: header, tag table, then desc/wtpt/rgbXYZ/rgbTRC tags.
    Colorants are the D50-adapted XYZ of the primaries, as ICC requires.
    """
    curve = b"curv" + bytes(4) + (1).to_bytes(4, "big") + round(gamma * 256).to_bytes(2, "big")
    curve += bytes(2)  # pad to a 4-byte boundary
    tags = [
        (b"desc", _desc_tag(description)),
        (b"wtpt", _xyz_tag(0.9642, 1.0, 0.8249)),
        (b"rXYZ", _xyz_tag(*red)),
        (b"gXYZ", _xyz_tag(*green)),
        (b"bXYZ", _xyz_tag(*blue)),
        (b"rTRC", curve),
        (b"gTRC", curve),
        (b"bTRC", curve),
        (b"cprt", b"text" + bytes(4) + b"none\x00\x00\x00\x00"),
    ]
    table_size = 4 + 12 * len(tags)
    offset = 128 + table_size
    table = len(tags).to_bytes(4, "big")
    payload = b""
    for signature, data in tags:
        while len(data) % 4:
            data += b"\x00"
        table += (
            signature + (offset + len(payload)).to_bytes(4, "big") + len(data).to_bytes(4, "big")
        )
        payload += data
    size = 128 + table_size + len(payload)
    header = (
        size.to_bytes(4, "big")
        + bytes(4)
        + bytes.fromhex("02100000")
        + b"mntr"
        + b"RGB "
        + b"XYZ "
        + bytes(12)
        + b"acsp"
        + bytes(4 * 4)
        + bytes(8)
        + bytes(4)
        + _s15f16(0.9642)
        + _s15f16(1.0)
        + _s15f16(0.8249)
        + bytes(4)
        + bytes(16)
        + bytes(28)
    )
    assert len(header) == 128
    return header + table + payload


def display_p3_profile() -> bytes:
    """Display P3 primaries (D65 white), Bradford-adapted to D50, with a 2.2 gamma."""
    return matrix_profile(
        "Display P3 (test)",
        red=(0.5151, 0.2412, -0.0011),
        green=(0.2920, 0.6922, 0.0419),
        blue=(0.1571, 0.0666, 0.7841),
    )


def png16(width: int, height: int, pixel: tuple[int, ...]) -> bytes:
    """A solid 16-bit-per-sample PNG written by hand (Pillow cannot save 16-bit RGB(A)).

    ``pixel`` has 3 (RGB, colour type 2) or 4 (RGBA, colour type 6) 16-bit samples.
    """
    import struct
    import zlib

    colour_type = {3: 2, 4: 6}[len(pixel)]
    row = b"\x00" + b"".join(struct.pack(">H", v) for v in pixel) * width
    raw = row * height

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 16, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def pixel(im: Image.Image, xy: tuple[int, int]) -> tuple[int, ...]:
    """A pixel as a tuple of ints, whatever the mode (typed for the tests)."""
    value = im.getpixel(xy)
    if isinstance(value, tuple):
        return tuple(int(v) for v in value)
    assert isinstance(value, (int, float))
    return (int(value),)


def band_range(im: Image.Image) -> tuple[int, int]:
    """(min, max) of a single-band image."""
    low, high = im.getextrema()
    assert isinstance(low, (int, float)) and isinstance(high, (int, float))
    return int(low), int(high)
