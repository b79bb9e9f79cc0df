"""From a model profile to the media pipeline's image route (budgets and token formula) and
its request-size offload limits."""

from __future__ import annotations

from dcode.media.limits import ImageRoute
from dcode.media.offload import OffloadLimits
from dcode.media.tokens import (
    GENERIC,
    AnthropicPixels,
    GeminiTiles,
    OpenAIPatches,
    OpenAITiles,
    TokenFormula,
)
from dcode.models.profiles import ModelProfile


def token_formula(name: str) -> TokenFormula:
    kind, _, argument = name.partition(":")
    match kind:
        case "openai-tile":
            return OpenAITiles()
        case "openai-patch":
            return OpenAIPatches(multiplier=float(argument or 1.0))
        case "anthropic":
            return AnthropicPixels()
        case "gemini":
            return GeminiTiles()
        case _:
            return GENERIC


def route_for(profile: ModelProfile) -> ImageRoute:
    return ImageRoute(
        profile.image_max_pixels,
        profile.image_max_bytes,
        token_formula(profile.image_token_formula),
    )


def request_limits(profile: ModelProfile) -> OffloadLimits:
    """What the images of one request may add up to before the oldest are left out."""
    return OffloadLimits(
        max_bytes=profile.request_image_bytes, max_images=profile.request_max_images
    )
