"""How many input tokens an image costs, per provider family.

``/context`` and the request planner need an estimate *before* a request is sent, and each
provider charges images differently (tiles, patches or raw pixels). The formulas here follow
the providers' public descriptions; numbers drift, so every constant is a field that a model
profile or user config can override. Estimates round up: a budget that is slightly
pessimistic is cheaper than a context overflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True, slots=True)
class OpenAITiles:
    """OpenAI tile pricing: fit inside ``fit``², shrink the short side to ``short_side``,
    then ``base + per_tile`` per ``tile``-px square. ``low`` detail is a flat ``base``."""

    low_detail: bool = False
    base: int = 85
    per_tile: int = 170
    tile: int = 512
    fit: int = 2048
    short_side: int = 768


@dataclass(frozen=True, slots=True)
class OpenAIPatches:
    """OpenAI patch pricing: ``patch``-px patches capped at ``cap`` (the image is shrunk until
    it fits), times a per-model ``multiplier`` (e.g. 1.62 for gpt-4.1-mini)."""

    multiplier: float = 1.0
    patch: int = 32
    cap: int = 1536


@dataclass(frozen=True, slots=True)
class AnthropicPixels:
    """Anthropic pricing: ``w·h/divisor`` after the server-side downscale to a long side of
    ``max_long_side`` and about ``max_pixels`` pixels."""

    divisor: int = 750
    max_long_side: int = 1568
    max_pixels: int = 1_150_000


@dataclass(frozen=True, slots=True)
class GeminiTiles:
    """Gemini pricing: a flat ``per_tile`` for images within ``small_side`` on both sides,
    otherwise ``per_tile`` for each ``tile``-px square."""

    small_side: int = 384
    tile: int = 768
    per_tile: int = 258


@dataclass(frozen=True, slots=True)
class GenericPixels:
    """A provider-neutral default: one token per ``divisor`` pixels with no server resize.

    Request variants are already bounded by their route's pixel budget, so a per-pixel rate is
    a fair stand-in; 750 px/token is the most expensive documented rate, so unknown providers
    are over- rather than under-estimated.
    """

    divisor: int = 750


TokenFormula: TypeAlias = (
    OpenAITiles | OpenAIPatches | AnthropicPixels | GeminiTiles | GenericPixels
)

GENERIC = GenericPixels()


def estimate_image_tokens(width: int, height: int, formula: TokenFormula = GENERIC) -> int:
    """Estimated input tokens for one image of ``width``×``height`` sent as is."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image dimensions must be positive, got {width}x{height}")
    match formula:
        case OpenAITiles():
            return _openai_tiles(width, height, formula)
        case OpenAIPatches():
            return _openai_patches(width, height, formula)
        case AnthropicPixels():
            return _anthropic(width, height, formula)
        case GeminiTiles():
            return _gemini(width, height, formula)
        case GenericPixels():
            return math.ceil(width * height / formula.divisor)


def _openai_tiles(width: int, height: int, f: OpenAITiles) -> int:
    if f.low_detail:
        return f.base
    w, h = float(width), float(height)
    if max(w, h) > f.fit:
        shrink = f.fit / max(w, h)
        w, h = w * shrink, h * shrink
    if min(w, h) > f.short_side:
        shrink = f.short_side / min(w, h)
        w, h = w * shrink, h * shrink
    tiles = math.ceil(w / f.tile) * math.ceil(h / f.tile)
    return f.base + f.per_tile * tiles


def _openai_patches(width: int, height: int, f: OpenAIPatches) -> int:
    patches = math.ceil(width / f.patch) * math.ceil(height / f.patch)
    if patches > f.cap:
        # Shrink to the cap by area, then nudge down so whole patches fit along both sides.
        shrink = math.sqrt(f.patch * f.patch * f.cap / (width * height))
        across, down = width * shrink / f.patch, height * shrink / f.patch
        shrink *= min(math.floor(across) / across, math.floor(down) / down)
        patches = math.ceil(width * shrink / f.patch) * math.ceil(height * shrink / f.patch)
        patches = min(patches, f.cap)
    return math.ceil(patches * f.multiplier)


def _anthropic(width: int, height: int, f: AnthropicPixels) -> int:
    shrink = min(
        1.0, f.max_long_side / max(width, height), math.sqrt(f.max_pixels / (width * height))
    )
    w = max(1, math.floor(width * shrink))
    h = max(1, math.floor(height * shrink))
    return math.ceil(w * h / f.divisor)


def _gemini(width: int, height: int, f: GeminiTiles) -> int:
    if width <= f.small_side and height <= f.small_side:
        return f.per_tile
    return math.ceil(width / f.tile) * math.ceil(height / f.tile) * f.per_tile
