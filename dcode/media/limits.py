"""Budgets of the media pipeline: what admission accepts and what a model route receives.

They are plain frozen dataclasses so that config and model profiles can override any field,
and they validate themselves on construction: a zero or negative budget is a configuration bug
that must fail at startup, not produce a 0-byte image in the middle of a request.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from dcode.media.tokens import GENERIC, TokenFormula

MiB = 1024 * 1024


def _require_positive(owner: AdmissionLimits | ImageRoute) -> None:
    for f in fields(owner):
        value = getattr(owner, f.name)
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
            raise ValueError(f"{type(owner).__name__}.{f.name} must be > 0, got {value}")


@dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """What one user message may bring in, and what each normalized attachment may become.

    ``max_source_*`` bound the *input* (checked from the header before any pixel is
    decoded); ``normalized_*`` bound the stored attachment. The normalized byte figure is a
    target for the quality ladder, not a hard cap: when even the lowest rung misses it, the
    smallest output is kept (it is still far below ``max_source_bytes``).
    """

    max_images_per_message: int = 20
    max_message_source_bytes: int = 200 * MiB
    max_source_bytes: int = 20 * MiB
    max_source_pixels: int = 64_000_000
    max_source_side: int = 8192
    normalized_max_bytes: int = 4 * MiB
    normalized_max_pixels: int = 2048 * 2048
    normalized_max_side: int = 8192

    def __post_init__(self) -> None:
        _require_positive(self)


DEFAULT_LIMITS = AdmissionLimits()


@dataclass(frozen=True, slots=True)
class ImageRoute:
    """The image budget of one model route: each request image gets at most ``max_pixels``
    pixels and ``max_bytes`` encoded bytes; ``tokens`` prices it for ``/context``.

    Model profiles carry one of these. Budgets ≤ 0 are rejected here so that no code path can
    ask the encoder for an impossible image.
    """

    max_pixels: int
    max_bytes: int
    tokens: TokenFormula = GENERIC

    def __post_init__(self) -> None:
        _require_positive(self)


DEFAULT_ROUTE = ImageRoute(max_pixels=640_000, max_bytes=1 * MiB)
