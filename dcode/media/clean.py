"""When may a source be stored byte for byte? The precise definition of a *clean* image.

Passing a file through untouched is faster, lossless and keeps what the user pasted, but
only when re-encoding would not change anything a model sees and would not strip anything
private. A source is clean when, after its one full decode, ALL of these hold:

1. **Container**: PNG, JPEG (baseline or progressive; not MPO) or WebP, with one frame
   (no APNG, no animated WebP).
2. **Samples**: mode ``RGB`` or ``RGBA`` with 8 bits per channel (PNG IHDR bit depth 8;
   Pillow silently reduces 16-bit PNGs to ``RGB``, so the header is read directly) and no
   colour-key transparency (PNG ``tRNS``).
3. **Colour**: no ICC profile, or one that is effectively sRGB (``colour.is_srgb_profile``:
   converting the RGB cube through it changes no channel by more than 2 levels). A PNG
   ``gAMA``/``cHRM`` without an ``sRGB`` chunk must state sRGB's gamma (1/2.2) and
   primaries, because decoders that honour them would otherwise show other colours.
4. **Orientation**: no EXIF/XMP orientation other than 1.
5. **Metadata**: nothing that normalization would strip. Only rendering-neutral keys may
   appear in Pillow's ``info``: resolution (``dpi``, ``aspect``, JFIF density), progressive
   and interlace flags, Adobe APP14 colour-transform markers, WebP's container defaults
   (``loop``, ``background``, and the ``timestamp``/``duration`` of its only frame), and
   the colour facts above. Any EXIF block (even one holding only orientation 1: it may carry
   GPS or camera serials), XMP, IPTC/Photoshop resources, comments or PNG text chunks make
   the image unclean.
6. **Budgets**: within the normalized limits: at most ``normalized_max_pixels`` pixels and
   ``normalized_max_side`` per side (so the sizing rule would not scale it) and at most
   ``normalized_max_bytes`` bytes.
"""

from __future__ import annotations

from PIL import Image

from dcode.media.colour import is_srgb_profile
from dcode.media.limits import AdmissionLimits

_NEUTRAL_KEYS = {
    "PNG": frozenset(
        {"dpi", "aspect", "interlace", "gamma", "srgb", "chromaticity", "icc_profile"}
    ),
    "JPEG": frozenset(
        {
            "jfif",
            "jfif_version",
            "jfif_unit",
            "jfif_density",
            "dpi",
            "progressive",
            "progression",
            "adobe",
            "adobe_transform",
            "icc_profile",
        }
    ),
    "WEBP": frozenset({"loop", "background", "timestamp", "duration", "icc_profile"}),
}
_SRGB_GAMMA = 0.45455
_SRGB_CHROMATICITY = (0.3127, 0.329, 0.64, 0.33, 0.3, 0.6, 0.15, 0.06)
_ORIENTATION_TAG = 0x0112


def is_clean(im: Image.Image, data: bytes, limits: AdmissionLimits) -> bool:
    """Whether the decoded ``im`` (whose file is ``data``) may be stored byte for byte."""
    fmt = im.format or ""
    neutral = _NEUTRAL_KEYS.get(fmt)
    if neutral is None or getattr(im, "n_frames", 1) != 1:
        return False
    if im.mode not in ("RGB", "RGBA") or not _within_budgets(im, data, limits):
        return False
    if fmt == "PNG" and (len(data) < 25 or data[24] != 8):
        return False
    if any(key not in neutral for key in im.info):
        return False
    icc = im.info.get("icc_profile")
    if icc and not (isinstance(icc, bytes) and is_srgb_profile(icc)):
        return False
    return _png_colour_is_srgb(im) and _orientation(im) == 1


def _within_budgets(im: Image.Image, data: bytes, limits: AdmissionLimits) -> bool:
    width, height = im.size
    return (
        width * height <= limits.normalized_max_pixels
        and max(width, height) <= limits.normalized_max_side
        and len(data) <= limits.normalized_max_bytes
    )


def _png_colour_is_srgb(im: Image.Image) -> bool:
    if im.format != "PNG" or "srgb" in im.info:
        return True
    gamma = im.info.get("gamma")
    if gamma is not None and abs(float(gamma) - _SRGB_GAMMA) > 0.0005:
        return False
    chroma = im.info.get("chromaticity")
    if chroma is None:
        return True
    return len(chroma) == 8 and all(
        abs(float(a) - b) <= 0.002 for a, b in zip(chroma, _SRGB_CHROMATICITY, strict=True)
    )


def _orientation(im: Image.Image) -> int:
    """The EXIF (or XMP, which Pillow folds in) orientation; 1 when absent or unreadable."""
    try:
        value = im.getexif().get(_ORIENTATION_TAG, 1)
    except Exception:  # noqa: BLE001 - a broken EXIF block simply is not "orientation ≠ 1"
        return 1
    return value if isinstance(value, int) else 1
