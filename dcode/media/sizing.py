"""The one sizing rule shared by normalization and request variants.

``s = min(1, sqrt(max_pixels / (w·h)))``; the short side becomes ``floor(short·s)`` and the
long side ``floor(short'·long/short)``, each at least 1. Deriving the long side from the
rounded short side keeps the aspect ratio exact in integers (2048×1024 → 1130×565, not
1131×565), and never upscaling keeps small screenshots pixel-exact.

Everything is integer arithmetic: ``floor(short·sqrt(P/(w·h)))`` equals
``isqrt(short²·P // (w·h))``, so results never wobble with floating-point rounding (a float
``2048·0.390625`` happens to be exact, but many other products are not).
"""

from __future__ import annotations

import math


def fit_pixels(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """Largest size with the same aspect ratio and at most ``max_pixels`` pixels (no upscale)."""
    _check(width, height, max_pixels)
    if width * height <= max_pixels:
        return width, height
    short, long = min(width, height), max(width, height)
    new_short = max(1, math.isqrt(short * short * max_pixels // (width * height)))
    # Only when the short side had to be clamped up to 1 px (an extreme aspect ratio against
    # a tiny budget) can the rule overshoot the budget; cap the long side there too.
    new_long = max(1, min(new_short * long // short, max_pixels // new_short))
    return (new_long, new_short) if width >= height else (new_short, new_long)


def fit_long_side(width: int, height: int, max_side: int) -> tuple[int, int]:
    """Shrink so that neither side exceeds ``max_side``, keeping the aspect ratio."""
    _check(width, height, max_side)
    long = max(width, height)
    if long <= max_side:
        return width, height
    short = min(width, height)
    new_short = max(1, short * max_side // long)
    return (max_side, new_short) if width >= height else (new_short, max_side)


def target_size(width: int, height: int, max_pixels: int, max_side: int) -> tuple[int, int]:
    """The pixel budget first, then the side cap."""
    w, h = fit_pixels(width, height, max_pixels)
    return fit_long_side(w, h, max_side)


def _check(width: int, height: int, budget: int) -> None:
    if width <= 0 or height <= 0:
        raise ValueError(f"image dimensions must be positive, got {width}x{height}")
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
