"""Source bytes → one normalized attachment (8-bit sRGB(A) JPEG/WebP, or the clean original).

This is admission's CPU work, kept pure (bytes in, bytes out, no disk) so that tests, the
store and ``media inspect`` share it. It is synchronous and can take tens of milliseconds
for a large screenshot: callers on the event loop run it with ``asyncio.to_thread`` or in
the transform pool.

Steps, in order (see ``decode`` for the safety reasoning, ``clean`` for passthrough and
``colour`` for the colour decisions):
1. cheap refusals: empty, over ``max_source_bytes``, a video container;
2. lazy open with the decoder allow-list, source limits checked from the header;
3. one full decode of the first frame (JPEG DCT-scaled when it will be shrunk anyway);
4. a clean source is kept byte for byte;
5. otherwise: EXIF orientation baked in, colour converted to 8-bit sRGB(A), alpha dropped
   only when every pixel is opaque, scaled by the sizing rule into the normalized box, and
   encoded down the quality ladder (alpha → WebP, opaque → JPEG), metadata left behind;
6. the output's facts are re-read from its own header and compared with what was intended
   before its sha256 becomes the attachment id.

Where the time goes for a 4K PNG screenshot on 2 cores (``scripts/bench/images.py`` prints it
per stage): the PNG decode (~84 ms, one zlib stream, the floor), the box-filter shrink (~23 ms,
in two parallel bands, see ``bands``) and the JPEG encode (~8 ms); the output check reads a
header only (<0.5 ms). Pillow's freed image memory is kept for reuse while images are being
processed (``memory``), which spares ~10,000 page faults per screenshot.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from PIL import Image

from dcode.media.attachment import Attachment, OriginalFacts
from dcode.media.clean import is_clean
from dcode.media.colour import has_real_alpha, to_srgb8
from dcode.media.decode import load_checked, open_checked, reject
from dcode.media.encode import DEFAULT_POLICY, EncoderPolicy, encode_ladder, resize
from dcode.media.errors import VIDEO_NOT_SUPPORTED_DETAIL, ImageRejected, RejectReason
from dcode.media.facts import MEDIA_TYPES, FactsMismatch, check_output
from dcode.media.kinds import sniff_kind
from dcode.media.limits import DEFAULT_LIMITS, AdmissionLimits
from dcode.media.memory import reusable_memory
from dcode.media.sizing import target_size
from dcode.media.stages import stage

_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
_SWAPS_SIDES = frozenset({5, 6, 7, 8})


@dataclass(frozen=True, slots=True)
class NormalizedImage:
    """The bytes to store and their verified facts; ``digest`` is the attachment id."""

    data: bytes
    digest: str
    format: str
    width: int
    height: int
    alpha: bool
    passthrough: bool
    original: OriginalFacts

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]

    def attachment(self, name: str) -> Attachment:
        """The facts of this image as an :class:`Attachment` shown under ``name``."""
        return Attachment(
            id=self.digest,
            media_type=self.media_type,
            width=self.width,
            height=self.height,
            byte_size=len(self.data),
            alpha=self.alpha,
            name=name,
            original=self.original,
            passthrough=self.passthrough,
        )


def normalize_image(
    data: bytes,
    name: str,
    limits: AdmissionLimits = DEFAULT_LIMITS,
    policy: EncoderPolicy = DEFAULT_POLICY,
) -> NormalizedImage:
    """Normalize one source; raises :class:`~dcode.media.errors.ImageRejected` with a reason."""
    if not data:
        raise reject(name, RejectReason.EMPTY, "empty file")
    if len(data) > limits.max_source_bytes:
        raise reject(
            name,
            RejectReason.TOO_MANY_BYTES,
            f"too large: {len(data):,} bytes exceeds {limits.max_source_bytes:,}",
        )
    if sniff_kind(data[:376]) == "video":
        raise reject(name, RejectReason.VIDEO_UNSUPPORTED, VIDEO_NOT_SUPPORTED_DETAIL)
    with reusable_memory():
        return _normalize(data, name, limits, policy)


def _normalize(
    data: bytes, name: str, limits: AdmissionLimits, policy: EncoderPolicy
) -> NormalizedImage:
    with stage("decode"):
        im = open_checked(data, name, limits)
    with im:
        fmt = im.format or "?"
        header = im.size
        target = target_size(*header, limits.normalized_max_pixels, limits.normalized_max_side)
        with stage("decode"):
            load_checked(im, name, limits, draft_to=target if target != header else None)
        # Only after the checked decode: PNG's getexif() would otherwise trigger a load of its
        # own, and the error of that hidden load must not be swallowed.
        orientation = _orientation(im)
        # A drafted JPEG decodes smaller than its header says; everything else is measured
        # after decoding, because a container can disagree with its payload.
        width, height = header if im.size != header and fmt in ("JPEG", "MPO") else im.size
        shown = (height, width) if orientation in _SWAPS_SIDES else (width, height)
        original = OriginalFacts(fmt, shown[0], shown[1], len(data))
        if is_clean(im, data, limits):
            return _passthrough(im, data, name, original)
        return _convert(im, name, orientation, original, limits, policy)


def _passthrough(
    im: Image.Image, data: bytes, name: str, original: OriginalFacts
) -> NormalizedImage:
    rgba = im.mode == "RGBA"
    fmt = im.format or ""
    try:
        check_output(data, fmt=fmt, width=im.width, height=im.height, alpha=rgba, max_bytes=None)
    except FactsMismatch as exc:
        raise reject(name, RejectReason.OUTPUT_INVALID, f"passthrough check failed: {exc}") from exc
    return NormalizedImage(
        data=data,
        digest=hashlib.sha256(data).hexdigest(),
        format=fmt,
        width=im.width,
        height=im.height,
        alpha=rgba and has_real_alpha(im),
        passthrough=True,
        original=original,
    )


def _convert(
    im: Image.Image,
    name: str,
    orientation: int,
    original: OriginalFacts,
    limits: AdmissionLimits,
    policy: EncoderPolicy,
) -> NormalizedImage:
    try:
        with stage("colour"):
            upright = im.transpose(_TRANSPOSE[orientation]) if orientation in _TRANSPOSE else im
            pixels = to_srgb8(upright)
            if pixels.mode == "RGBA" and not has_real_alpha(pixels):
                pixels = pixels.convert("RGB")
        # Sized from the original's upright dimensions, not the (possibly drafted) pixels,
        # so that the result does not depend on how the decoder got there.
        size = target_size(
            original.width,
            original.height,
            limits.normalized_max_pixels,
            limits.normalized_max_side,
        )
        with stage("resize"):
            pixels = resize(pixels, size, policy.master_resample)
        with stage("encode"):
            encoded = encode_ladder(pixels, limits.normalized_max_bytes, policy)
    except Exception as exc:  # Pillow conversions fail with assorted types
        raise reject(
            name,
            RejectReason.UNSUPPORTED_TYPE,
            f"cannot convert {im.mode} pixels to sRGB ({type(exc).__name__}: {exc})",
        ) from exc
    try:
        with stage("verify"):
            check_output(
                encoded.data,
                fmt=encoded.format,
                width=size[0],
                height=size[1],
                alpha=encoded.alpha,
                max_bytes=limits.normalized_max_bytes if encoded.fits else limits.max_source_bytes,
            )
            digest = hashlib.sha256(encoded.data).hexdigest()
    except FactsMismatch as exc:
        raise reject(
            name, RejectReason.OUTPUT_INVALID, f"normalized output invalid: {exc}"
        ) from exc
    return NormalizedImage(
        data=encoded.data,
        digest=digest,
        format=encoded.format,
        width=size[0],
        height=size[1],
        alpha=encoded.alpha,
        passthrough=False,
        original=original,
    )


def _orientation(im: Image.Image) -> int:
    """EXIF/XMP orientation 1..8 (Pillow folds XMP into ``getexif``); 1 when unreadable.

    TIFF is excluded: Pillow applies TIFF orientation itself while decoding.
    """
    if im.format == "TIFF":
        return 1
    try:
        value = im.getexif().get(0x0112, 1)
    except Exception:  # noqa: BLE001 - broken EXIF must not sink an otherwise fine image
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def own_jpeg(
    data: bytes, name: str, width: int, height: int, limits: AdmissionLimits = DEFAULT_LIMITS
) -> NormalizedImage | None:
    """A JPEG dcode's own encoder just made (a sampled video frame) as it stands, or None.

    It is checked the way the normalizer checks its own output: from its header, against the
    facts its maker claims (``width`` x ``height``, baseline 8-bit RGB, no metadata, within the
    normalized budgets), without decoding the pixels again. Whatever is not exactly that (None)
    goes through :func:`normalize_image` like any other source.
    """
    try:
        with stage("decode"):
            im = open_checked(data, name, limits)
    except ImageRejected:
        return None
    with im:
        if im.format != "JPEG" or im.size != (width, height) or not is_clean(im, data, limits):
            return None
        try:
            return _passthrough(im, data, name, OriginalFacts("JPEG", width, height, len(data)))
        except ImageRejected:
            return None
