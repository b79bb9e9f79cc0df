"""An image block's tokens, by the route's formula at the size the route sends it.

A dcode reference block knows its picture's size; the route fits it to its pixel budget, and
the route's formula (``dcode.media.tokens``) prices it. An inline image (a ``base64`` image
block, or a ``data:`` URL after projection) is measured from its header.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Callable

from dcode.media.attachment import InvalidReferenceBlock, from_reference_block, is_reference_block
from dcode.media.limits import ImageRoute
from dcode.media.sizing import fit_pixels
from dcode.media.tokens import estimate_image_tokens


def _inline_bytes(block: dict[str, object]) -> bytes | None:
    data: str | None = None
    encoded = block.get("base64")
    if block.get("type") == "image" and isinstance(encoded, str):
        data = encoded
    elif block.get("type") == "image_url":
        url = block.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        if isinstance(url, str) and url.startswith("data:") and "," in url:
            data = url.split(",", 1)[1]
    if data is None:
        return None
    try:
        return base64.b64decode(data[:200_000], validate=False)  # enough for any header
    except (binascii.Error, ValueError):
        return None


def _inline_size(block: dict[str, object]) -> tuple[int, int] | None:
    raw = _inline_bytes(block)
    if raw is None:
        return None
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(raw)) as image:
            return image.size
    except (UnidentifiedImageError, OSError, ValueError):
        return None


def image_size(block: dict[str, object]) -> tuple[int, int] | None:
    """The picture's width and height, when ``block`` is an image dcode can measure."""
    if is_reference_block(block):
        try:
            attachment = from_reference_block(block)
        except InvalidReferenceBlock:
            return None
        return attachment.width, attachment.height
    return _inline_size(block)


def image_pricer(route: ImageRoute) -> Callable[[dict[str, object]], int | None]:
    """Tokens for an image block sent on ``route``; None for a block that is not an image."""

    def price(block: dict[str, object]) -> int | None:
        if block.get("type") not in {"image", "image_url"}:
            return None
        size = image_size(block)
        if size is None or min(size) <= 0:
            return None
        width, height = fit_pixels(*size, route.max_pixels)
        return estimate_image_tokens(width, height, route.tokens)

    return price
