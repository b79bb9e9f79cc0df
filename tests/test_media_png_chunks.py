"""A PNG whose optional chunk has a wrong checksum (server-everything's tiny image has a broken
colour profile) is decoded without that chunk; a broken chunk the picture needs, or a file cut
short, is refused naming the chunk and where it is."""

from __future__ import annotations

import io
import struct

import pytest
from PIL import Image, PngImagePlugin

from dcode.media.decode import load_checked, open_checked
from dcode.media.errors import ImageRejected
from dcode.media.limits import DEFAULT_LIMITS


def png_with_note() -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "a note nobody needs")
    out = io.BytesIO()
    Image.new("RGB", (12, 7), (200, 30, 30)).save(out, "PNG", pnginfo=info)
    return out.getvalue()


def chunk_at(data: bytes, kind: bytes) -> tuple[int, int]:
    """The offset of the ``kind`` chunk and of its checksum."""
    pos = 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        if data[pos + 4 : pos + 8] == kind:
            return pos, pos + 8 + length
        pos += 12 + length
    raise LookupError(kind)


def with_bad_checksum(data: bytes, kind: bytes) -> bytes:
    _, crc = chunk_at(data, kind)
    return data[:crc] + bytes(b ^ 0xFF for b in data[crc : crc + 4]) + data[crc + 4 :]


def opened(data: bytes) -> Image.Image:
    image = open_checked(data, "tiny.png", DEFAULT_LIMITS)
    load_checked(image, "tiny.png", DEFAULT_LIMITS, None)
    return image


def refusal(data: bytes) -> str:
    with pytest.raises(ImageRejected) as caught:
        opened(data)
    return caught.value.rejection.detail


def test_a_broken_optional_chunk_is_left_out_and_the_picture_decodes() -> None:
    broken = with_bad_checksum(png_with_note(), b"tEXt")
    image = opened(broken)
    assert image.size == (12, 7) and image.convert("RGB").getpixel((3, 3)) == (200, 30, 30)


def test_a_broken_chunk_the_picture_needs_is_named() -> None:
    assert (
        refusal(with_bad_checksum(png_with_note(), b"IHDR"))
        == "corrupt PNG: the checksum of its IHDR chunk (at byte 8) is wrong"
    )


def test_a_png_cut_short_says_where() -> None:
    data = with_bad_checksum(png_with_note(), b"tEXt")
    idat, _ = chunk_at(data, b"IDAT")
    assert refusal(data[: idat + 20]).startswith(
        f"corrupt PNG: its IDAT chunk at byte {idat:,} is cut short"
    )
