"""Shared helpers for the media tests (no tests here): the corpus location and image makers.

The corpus of real files lives beside the project (``../shared/corpus``); tests that need it
skip with a clear reason when it is absent, so a bare checkout still runs the rest.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from PIL import Image

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CORPUS = PROJECT_ROOT.parent / "shared" / "corpus" / "images" / "pillow"

requires_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"image corpus not found at {CORPUS} (expected ../shared/corpus beside the project)",
)


def corpus_file(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"corpus file {name} not found under {CORPUS}")
    return path


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "LICENSE")


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
    """A smooth, compressible, orientation-revealing RGB test card."""
    width, height = size
    im = Image.new("RGB", size)
    im.putdata(
        [
            (x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), 128)
            for y in range(height)
            for x in range(width)
        ]
    )
    return im


def opened(data: bytes) -> Image.Image:
    """Fully decode ``data`` (tests re-verify outputs by really decoding them)."""
    im = Image.open(io.BytesIO(data))
    im.load()
    return im
