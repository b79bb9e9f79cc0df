"""The sizing rule, the token formulas and the budget dataclasses."""

from __future__ import annotations

import math
import random

import pytest

from dcode.media.limits import DEFAULT_LIMITS, DEFAULT_ROUTE, AdmissionLimits, ImageRoute
from dcode.media.sizing import fit_long_side, fit_pixels, target_size
from dcode.media.tokens import (
    AnthropicPixels,
    GeminiTiles,
    GenericPixels,
    OpenAIPatches,
    OpenAITiles,
    estimate_image_tokens,
)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((2048, 2048), (800, 800)),
        ((2048, 1024), (1130, 565)),
        ((1024, 2048), (565, 1130)),
        ((800, 800), (800, 800)),
        ((640, 480), (640, 480)),
        ((1, 1), (1, 1)),
    ],
)
def test_route_sizes_at_640k(size: tuple[int, int], expected: tuple[int, int]) -> None:
    assert fit_pixels(*size, 640_000) == expected


def test_rule_matches_its_definition_and_budget() -> None:
    rnd = random.Random(3)
    for _ in range(20_000):
        w, h, budget = rnd.randint(1, 8192), rnd.randint(1, 8192), rnd.randint(1, 5_000_000)
        got = fit_pixels(w, h, budget)
        if w * h <= budget:
            assert got == (w, h)  # never upscale, never touch what fits
            continue
        short, long = min(w, h), max(w, h)
        s = math.sqrt(budget / (w * h))
        new_short = math.floor(short * s)
        if new_short >= 1 and abs(short * s - round(short * s)) > 1e-6:
            new_long = new_short * long // short
            assert sorted(got) == sorted((new_short, new_long))
        assert got[0] * got[1] <= max(budget, 1) or min(got) == 1
        assert got[0] <= w and got[1] <= h  # each side shrinks, orientation kept


def test_extreme_aspect_keeps_at_least_one_pixel_and_the_budget() -> None:
    assert fit_pixels(10_000, 1, 100) == (100, 1)
    assert fit_pixels(1, 10_000, 100) == (1, 100)
    assert fit_pixels(5, 5, 1) == (1, 1)


def test_long_side_cap_after_pixel_budget() -> None:
    assert fit_long_side(9000, 100, 8192) == (8192, 91)
    assert fit_long_side(100, 9000, 8192) == (91, 8192)
    assert target_size(3840, 2160, 2048 * 2048, 8192) == (2730, 1536)
    assert target_size(8192, 8192, 2048 * 2048, 8192) == (2048, 2048)


def test_defaults_are_designs() -> None:
    mib = 1024 * 1024
    assert (
        AdmissionLimits(
            max_images_per_message=20,
            max_message_source_bytes=200 * mib,
            max_source_bytes=20 * mib,
            max_source_pixels=64_000_000,
            max_source_side=8192,
            normalized_max_bytes=4 * mib,
            normalized_max_pixels=2048 * 2048,
            normalized_max_side=8192,
        )
        == DEFAULT_LIMITS
    )
    assert (DEFAULT_ROUTE.max_pixels, DEFAULT_ROUTE.max_bytes) == (640_000, mib)


@pytest.mark.parametrize(("pixels", "nbytes"), [(0, 1), (1, 0), (-5, 100), (100, -1)])
def test_budgets_must_be_positive(pixels: int, nbytes: int) -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        ImageRoute(max_pixels=pixels, max_bytes=nbytes)


def test_admission_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_source_side"):
        AdmissionLimits(max_source_side=0)


def test_budgets_are_frozen() -> None:
    with pytest.raises(AttributeError):
        DEFAULT_ROUTE.max_pixels = 1  # type: ignore[misc]


# -- token formulas ---------------------------------------------------------------------------


def test_openai_tiles() -> None:
    assert estimate_image_tokens(1024, 1024, OpenAITiles()) == 765
    assert estimate_image_tokens(2048, 4096, OpenAITiles()) == 1105  # →1024×2048→768×1536
    assert estimate_image_tokens(512, 512, OpenAITiles()) == 255
    assert estimate_image_tokens(4000, 3000, OpenAITiles(low_detail=True)) == 85


def test_openai_patches() -> None:
    assert estimate_image_tokens(1024, 1024, OpenAIPatches()) == 1024
    assert estimate_image_tokens(1024, 1024, OpenAIPatches(multiplier=1.62)) == 1659
    capped = estimate_image_tokens(1800, 2400, OpenAIPatches())
    assert 1400 <= capped <= 1536
    assert estimate_image_tokens(8000, 8000, OpenAIPatches(multiplier=2.46)) <= math.ceil(
        1536 * 2.46
    )


def test_anthropic_pixels() -> None:
    assert estimate_image_tokens(1000, 1000, AnthropicPixels()) == 1334
    big = estimate_image_tokens(4000, 3000, AnthropicPixels())
    assert 1400 <= big <= math.ceil(1_150_000 / 750)
    assert estimate_image_tokens(3000, 200, AnthropicPixels()) == math.ceil(1568 * 104 / 750)


def test_gemini_tiles() -> None:
    assert estimate_image_tokens(384, 384, GeminiTiles()) == 258
    assert estimate_image_tokens(1000, 500, GeminiTiles()) == 2 * 258


def test_generic_default_and_route_formula() -> None:
    assert estimate_image_tokens(1130, 565) == math.ceil(1130 * 565 / 750)
    assert estimate_image_tokens(750, 1, GenericPixels()) == 1
    assert estimate_image_tokens(10, 10, DEFAULT_ROUTE.tokens) == 1


def test_tokens_reject_empty_images() -> None:
    with pytest.raises(ValueError, match="image dimensions must be positive, got 0x10"):
        estimate_image_tokens(0, 10)
