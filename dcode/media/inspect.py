"""What exactly would be sent for an image: the data behind ``dcode media inspect``.

Read-only on purpose: inspecting a file normalizes it and derives the route's variant in
memory (reusing a cached variant when the store already has one) but writes nothing, so
running the command never fills the store with files the user only looked at. Synchronous
CPU work, like admission.
"""

from __future__ import annotations

from pathlib import Path
from typing import Required, TypedDict

from dcode.media.derive import derive_variant, plan_variant
from dcode.media.errors import ImageRejected, MediaError
from dcode.media.limits import ImageRoute
from dcode.media.normalize import normalize_image
from dcode.media.store import AttachmentStore
from dcode.media.tokens import estimate_image_tokens
from dcode.media.variant_cache import VariantCache
from dcode.regular_files import NotRegularFile, read_regular


class ImageFacts(TypedDict):
    """An image's size and encoding at one stage."""

    width: int
    height: int
    format: str
    bytes: int


class NormalizedFacts(ImageFacts):
    id: str
    media_type: str
    alpha: bool
    passthrough: bool


class RequestFacts(ImageFacts):
    variant_id: str
    media_type: str
    passthrough: bool
    estimated_tokens: int
    max_pixels: int
    max_bytes: int


class ImageReport(TypedDict, total=False):
    """``inspect_path``'s report (printed as JSON by ``--json``): the stages, or the error;
    the command adds the route's ``transport``."""

    path: Required[str]
    name: str
    original: ImageFacts
    normalized: NormalizedFacts
    request: RequestFacts
    error: str
    reason: str
    transport: str


def inspect_path(path: Path | str, route: ImageRoute, store: AttachmentStore) -> ImageReport:
    """``{"path", "name", "original", "normalized", "request"}``, or ``{"path", "error"}``."""
    p = Path(path)
    try:
        data = _read(p, store)
        image = normalize_image(data, p.name, store.limits, store.policy)
    except ImageRejected as exc:
        return {"path": str(p), "error": exc.rejection.detail, "reason": exc.rejection.reason.value}
    except NotRegularFile as exc:
        return {"path": str(p), "error": f"it {exc.strerror}"}
    except (MediaError, OSError) as exc:
        return {"path": str(p), "error": str(exc)}
    att = image.attachment(p.name)
    plan = plan_variant(att, route, store.policy)
    if plan.passthrough:
        request_bytes = att.byte_size
    else:
        cached = VariantCache(store.variants_dir).lookup(plan)
        request_bytes = (
            cached.byte_size
            if cached is not None
            else len(derive_variant(image.data, att, plan, store.policy).data)
        )
    return {
        "path": str(p),
        "name": att.name,
        "original": {
            "width": att.original.width,
            "height": att.original.height,
            "format": att.original.format,
            "bytes": att.original.byte_size,
        },
        "normalized": {
            "id": att.id,
            "width": att.width,
            "height": att.height,
            "format": image.format,
            "media_type": att.media_type,
            "bytes": att.byte_size,
            "alpha": att.alpha,
            "passthrough": att.passthrough,
        },
        "request": {
            "variant_id": plan.variant_id,
            "width": plan.width,
            "height": plan.height,
            "format": plan.format,
            "media_type": plan.media_type,
            "bytes": request_bytes,
            "passthrough": plan.passthrough,
            "estimated_tokens": estimate_image_tokens(plan.width, plan.height, route.tokens),
            "max_pixels": route.max_pixels,
            "max_bytes": route.max_bytes,
        },
    }


def _read(path: Path, store: AttachmentStore) -> bytes:
    return read_regular(path, store.limits.max_source_bytes + 1)  # one over: the cap still trips
