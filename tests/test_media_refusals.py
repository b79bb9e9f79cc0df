"""Refusals: limits checked from headers before any decode, bombs, truncation, foreign input."""

from __future__ import annotations

import struct
import time
import zlib

import pytest
from PIL import Image, ImageFile

from dcode.media.errors import ImageRejected, RejectReason
from dcode.media.limits import AdmissionLimits
from dcode.media.normalize import normalize_image
from dcode.media.store import AttachmentStore
from tests.test_media_fixtures import corpus_file, encode, gradient, noise, requires_corpus


def rejection(data: bytes, limits: AdmissionLimits | None = None) -> RejectReason:
    with pytest.raises(ImageRejected) as info:
        normalize_image(data, "x", limits) if limits else normalize_image(data, "x")
    return info.value.rejection.reason


# -- refusals ------------------------------------------------------------------------------------


def _png_declaring(width: int, height: int) -> bytes:
    """A real 1×1 PNG whose IHDR (with a valid CRC) claims ``width``×``height``."""
    data = bytearray(encode(Image.new("RGB", (1, 1)), "PNG"))
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    return bytes(data)


class LoadSpy:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = ImageFile.ImageFile.load

        def spy(im: ImageFile.ImageFile) -> object:
            self.calls += 1
            return original(im)

        monkeypatch.setattr(ImageFile.ImageFile, "load", spy)


@pytest.mark.parametrize(
    ("size", "reason"),
    [
        ((9000, 10), RejectReason.SIDE_TOO_LONG),
        ((10, 9000), RejectReason.SIDE_TOO_LONG),
        ((8000, 8001), RejectReason.TOO_MANY_PIXELS),
    ],
)
def test_pixel_and_side_limits_are_checked_before_decoding(
    monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], reason: RejectReason
) -> None:
    spy = LoadSpy(monkeypatch)
    assert rejection(_png_declaring(*size)) is reason
    assert spy.calls == 0


@requires_corpus
@pytest.mark.parametrize(
    "name",
    [
        "decompression_bomb.gif",
        "decompression_bomb_extents.gif",
        "png_decompression_dos.png",
        "decompression_bomb.ico",
    ],
)
def test_bombs_are_refused_before_any_decode(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    data = corpus_file(name).read_bytes()
    spy = LoadSpy(monkeypatch)
    started = time.perf_counter()
    assert rejection(data) is RejectReason.DECOMPRESSION_BOMB
    assert time.perf_counter() - started < 0.5
    assert spy.calls == 0, "a bomb reached Image.load()"


@requires_corpus
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("truncated_image.png", RejectReason.TRUNCATED),
        ("truncated_jpeg.jpg", RejectReason.TRUNCATED),
        ("broken_data_stream.png", RejectReason.CORRUPT),
        ("broken.png", RejectReason.CORRUPT),
    ],
)
def test_truncated_and_corrupt_files_are_refused(name: str, reason: RejectReason) -> None:
    assert rejection(corpus_file(name).read_bytes()) is reason


def test_truncated_png_with_a_readable_header() -> None:
    data = encode(noise((200, 200)), "PNG")
    assert rejection(data[: len(data) // 2]) is RejectReason.TRUNCATED


def test_empty_oversized_and_foreign_inputs() -> None:
    assert rejection(b"") is RejectReason.EMPTY
    small = AdmissionLimits(max_source_bytes=100)
    assert rejection(encode(noise((50, 50)), "PNG"), small) is RejectReason.TOO_MANY_BYTES
    assert rejection(b"just some text, not an image\n" * 4) is RejectReason.UNSUPPORTED_TYPE
    assert rejection(b"8BPS" + bytes(60)) is RejectReason.UNSUPPORTED_TYPE  # PSD
    assert rejection(b"%PDF-1.7\n" + bytes(60)) is RejectReason.UNSUPPORTED_TYPE


def test_rejection_names_the_file_and_reason() -> None:
    with pytest.raises(ImageRejected) as info:
        normalize_image(_png_declaring(9000, 10), "huge.png")
    assert info.value.rejection.name == "huge.png"
    assert "huge.png" in str(info.value) and "8192" in str(info.value)


def test_large_jpeg_is_draft_decoded_to_exact_target() -> None:
    data = encode(gradient((4001, 3001)), "JPEG", quality=90)
    n = normalize_image(data, "photo.jpg")
    expected = (2363, 1773)  # the sizing rule on 4001×3001 into 2048² pixels
    assert (n.width, n.height) == expected
    assert (n.original.width, n.original.height) == (4001, 3001)


def test_a_global_truncated_images_switch_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    data = encode(noise((100, 100)), "PNG")
    assert rejection(data[: len(data) // 2]) is RejectReason.CORRUPT


async def test_admission_runs_off_the_loop(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    store = AttachmentStore(tmp_path)
    [att] = await store.admit_async([(encode(gradient((20, 20)), "PNG"), "a.png")])
    assert att.passthrough
