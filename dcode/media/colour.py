"""Turn any decoded Pillow image into 8-bit sRGB (``RGB``) or sRGB with alpha (``RGBA``).

Models are trained on sRGB pixels and providers ignore embedded profiles inconsistently, so
colour is settled once, at admission: an embedded ICC profile is *applied* (then dropped),
high bit depths are *scaled* rather than clipped, and transparency in any of its forms
(palette entries, colour keys, alpha bands) becomes a real alpha channel that later stages
never flatten.

Decisions worth knowing:
- 16-bit integer samples map by their nominal range (``round(v/257)``) because that is how
  every viewer shows them; 32-bit integer and float samples have no nominal range, so they
  are windowed to their own min..max (floats already inside 0..1 scale by 255).
- A profile that converts a probe image to itself within 2 levels is treated as sRGB and
  skipped, whatever its name says; an unreadable or mismatched profile is ignored (the
  pixels are then taken as sRGB) rather than failing the whole image.
- lcms transforms are built with ``NOCACHE`` because the transform pool applies them from
  several threads at once and lcms's one-pixel cache is not thread-safe.
"""

from __future__ import annotations

import io
from functools import lru_cache
from typing import Literal

from PIL import Image, ImageChops, ImageCms

_SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))
_PROFILE_SPACE = {"RGB": "RGB", "RGBA": "RGB", "L": "GRAY", "LA": "GRAY", "CMYK": "CMYK"}
_SIXTEEN_BIT = frozenset({"I;16", "I;16L", "I;16B", "I;16N"})
_SRGB_TOLERANCE = 2


def to_srgb8(im: Image.Image) -> Image.Image:
    """The image as 8-bit ``RGB`` or ``RGBA`` in sRGB; alpha is kept whenever the source has
    any transparency information (whether it is actually used is decided by the caller)."""
    icc = im.info.get("icc_profile")
    working = _to_working_mode(im)
    if isinstance(icc, bytes) and icc:
        working = _apply_profile(working, icc)
    match working.mode:
        case "RGB" | "RGBA":
            return working
        case "L":
            return working.convert("RGB")
        case "LA":
            return working.convert("RGBA")
        case _:  # CMYK left over when its profile was unusable
            return working.convert("RGB")


def has_real_alpha(im: Image.Image) -> bool:
    """True when an ``RGBA`` image has at least one pixel that is not fully opaque."""
    if im.mode != "RGBA":
        return False
    low, _high = _band_range(im.getchannel("A"))
    return low < 255


def _to_working_mode(im: Image.Image) -> Image.Image:
    """Reduce every mode to one of L, LA, RGB, RGBA, CMYK (the ones lcms and encoders take)."""
    keyed = im.has_transparency_data
    match im.mode:
        case "RGBA" | "LA" | "CMYK":
            return im
        case "RGB":
            return im.convert("RGBA") if keyed else im
        case "L":
            return im.convert("LA") if keyed else im
        case "1":
            return im.convert("LA") if keyed else im.convert("L")
        case "P":
            return im.convert("RGBA") if keyed else im.convert("RGB")
        case "PA" | "RGBa":
            return im.convert("RGBA")
        case "La":
            return im.convert("LA")
        case "RGBX" | "YCbCr" | "LAB" | "HSV":
            return im.convert("RGB")
        case mode if mode in _SIXTEEN_BIT:
            return _scale_linear(im.convert("I"), 255 / 65535, 0.0)
        case "I":
            return _window(im, integer=True)
        case "F":
            return _window(im, integer=False)
        case _:
            return im.convert("RGBA" if "A" in im.getbands() else "RGB")


def _band_range(im: Image.Image) -> tuple[float, float]:
    """``getextrema`` of a single-band image, typed (Pillow's stub covers multi-band too)."""
    extrema = im.getextrema()
    low, high = extrema[0], extrema[1]
    if isinstance(low, tuple) or isinstance(high, tuple):
        raise ValueError(f"expected a single-band image, got {im.mode}")
    return float(low), float(high)


def _window(im: Image.Image, *, integer: bool) -> Image.Image:
    lo, hi = _band_range(im)
    if lo >= 0 and hi <= 255 and integer:
        return im.convert("L")
    if lo >= 0 and hi <= 65535 and integer:
        return _scale_linear(im, 255 / 65535, 0.0)
    if lo >= 0 and hi <= 1.0 and not integer:
        return _scale_linear(im, 255.0, 0.0)
    if hi <= lo:
        return Image.new("L", im.size, 0)
    scale = 255 / (hi - lo)
    return _scale_linear(im, scale, -lo * scale)


def _scale_linear(im: Image.Image, scale: float, offset: float) -> Image.Image:
    # point() on I/F images is a linear map evaluated in C; +0.5 makes the truncating cast
    # round to nearest, and the final convert clips to 0..255.
    return im.point(lambda v: v * scale + (offset + 0.5)).convert("L")


def is_srgb_profile(icc: bytes) -> bool:
    """True when ``icc`` is a readable RGB profile that maps the RGB cube onto itself in sRGB
    (within 2 levels), i.e. applying it would change nothing. Decides passthrough."""
    verdict, _transform = _profile_plan(icc, "RGB")
    return verdict == "srgb"


def _apply_profile(im: Image.Image, icc: bytes) -> Image.Image:
    verdict, transform = _profile_plan(icc, im.mode)
    if verdict != "apply" or transform is None:
        return im
    if im.mode == "LA":
        rgb = transform.apply(im.getchannel("L"))
        rgb.putalpha(im.getchannel("A"))
        return rgb
    return transform.apply(im)


@lru_cache(maxsize=64)
def _profile_plan(
    icc: bytes, mode: str
) -> tuple[Literal["apply", "srgb", "ignore"], ImageCms.ImageCmsTransform | None]:
    """What to do with ``icc`` for pixels in ``mode``: apply a transform to sRGB, nothing
    (it already is sRGB), or ignore it (unreadable, or for another colour space)."""
    space = _PROFILE_SPACE.get(mode)
    if space is None:
        return "ignore", None
    try:
        profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        if profile.profile.xcolor_space.strip() != space:
            return "ignore", None
        in_mode = "L" if mode == "LA" else mode
        out_mode = "RGBA" if mode == "RGBA" else "RGB"
        transform = ImageCms.buildTransform(
            profile,
            _SRGB,
            in_mode,
            out_mode,
            renderingIntent=ImageCms.Intent.PERCEPTUAL,
            flags=ImageCms.Flags.NOCACHE,
        )
    except (ImageCms.PyCMSError, OSError, ValueError, TypeError):
        return "ignore", None
    if space == "RGB" and _is_identity(transform, out_mode):
        return "srgb", None
    return "apply", transform


def _is_identity(transform: ImageCms.ImageCmsTransform, mode: str) -> bool:
    probe = _probe(mode)
    try:
        out = transform.apply(probe)
    except (ImageCms.PyCMSError, ValueError):
        return False
    worst = max(_band_range(band)[1] for band in ImageChops.difference(probe, out).split())
    return worst <= _SRGB_TOLERANCE


@lru_cache(maxsize=2)
def _probe(mode: str) -> Image.Image:
    """A 64×64 image covering the RGB cube in 16 steps per channel (plus opaque alpha)."""
    probe = Image.new("RGB", (64, 64))
    steps = [min(255, i * 17) for i in range(16)]
    probe.putdata([(r, g, b) for r in steps for g in steps for b in steps])
    return probe.convert(mode) if mode != "RGB" else probe
