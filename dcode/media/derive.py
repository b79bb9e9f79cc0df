"""What a route's request variant of an attachment must be, and the pure transform making it.

The plan is computed from facts alone (no bytes): dimensions by the shared sizing rule,
format by alpha routing, and a deterministic id over (attachment id, policy version, route
budgets, encoder parameters). Identical inputs always give the identical id and, because the
transform is a pure function of the normalized bytes, the identical bytes, which keeps a
provider's prompt cache warm across turns and restarts.

An attachment already within the route's pixel and byte budgets passes through: its stored
bytes are sent as they are (no cache entry is needed).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass

from PIL import Image

from dcode.media.attachment import Attachment
from dcode.media.encode import Encoded, EncoderPolicy, encode_ladder, resize
from dcode.media.facts import FORMAT_OF_MEDIA_TYPE, MEDIA_TYPES, OUTPUT_FORMATS, check_output
from dcode.media.limits import ImageRoute
from dcode.media.memory import reusable_memory
from dcode.media.sizing import fit_pixels
from dcode.media.stages import stage


@dataclass(frozen=True, slots=True)
class VariantPlan:
    """The facts a variant will have; the cache checks hits against exactly these."""

    variant_id: str
    attachment_id: str
    width: int
    height: int
    format: str
    alpha: bool
    max_bytes: int
    passthrough: bool

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]


def variant_id(attachment_id: str, route: ImageRoute, policy: EncoderPolicy) -> str:
    """sha256 over the canonical JSON of everything that determines the variant's bytes."""
    key = {
        "attachment": attachment_id,
        "max_pixels": route.max_pixels,
        "max_bytes": route.max_bytes,
        "encoder": policy.fingerprint(),
    }
    canonical = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def plan_variant(att: Attachment, route: ImageRoute, policy: EncoderPolicy) -> VariantPlan:
    width, height = fit_pixels(att.width, att.height, route.max_pixels)
    passthrough = (width, height) == (att.width, att.height) and att.byte_size <= route.max_bytes
    fmt = FORMAT_OF_MEDIA_TYPE[att.media_type] if passthrough else ("WEBP" if att.alpha else "JPEG")
    return VariantPlan(
        variant_id=variant_id(att.id, route, policy),
        attachment_id=att.id,
        width=width,
        height=height,
        format=fmt,
        alpha=att.alpha,
        max_bytes=route.max_bytes,
        passthrough=passthrough,
    )


def derive_variant(
    source: bytes, att: Attachment, plan: VariantPlan, policy: EncoderPolicy
) -> Encoded:
    """Shrink and re-encode the normalized ``source`` bytes to ``plan``; synchronous CPU work.

    JPEG attachments are DCT-scaled while decoding (``draft``), which makes a 4 MP → 0.6 MP
    variant several times cheaper than a full decode and resample.
    """
    with reusable_memory():
        return _derive(source, att, plan, policy)


def _derive(source: bytes, att: Attachment, plan: VariantPlan, policy: EncoderPolicy) -> Encoded:
    with Image.open(io.BytesIO(source), formats=OUTPUT_FORMATS) as im:
        with stage("variant_decode"):
            if im.format == "JPEG":
                im.draft(None, (plan.width, plan.height))
            im.load()
        pixels = im if im.mode in ("RGB", "RGBA") else im.convert("RGBA" if att.alpha else "RGB")
        if pixels.mode == "RGBA" and not att.alpha:
            pixels = pixels.convert("RGB")
        elif pixels.mode == "RGB" and att.alpha:
            pixels = pixels.convert("RGBA")
        with stage("variant_resize"):
            pixels = resize(pixels, (plan.width, plan.height), policy.variant_resample)
        with stage("variant_encode"):
            encoded = encode_ladder(pixels, plan.max_bytes, policy)
    with stage("variant_verify"):
        check_output(
            encoded.data,
            fmt=encoded.format,
            width=plan.width,
            height=plan.height,
            alpha=plan.alpha,
            max_bytes=plan.max_bytes if encoded.fits else None,
        )
    return encoded
