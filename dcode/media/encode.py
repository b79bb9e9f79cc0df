"""Encoding policy: alpha routing, the quality ladder and resampling, in one versioned place.

Normalization and request variants encode the same way, so the rules live here once:
- real alpha → WebP (``method=0``, the fastest, lossy colour with lossless alpha), because
  JPEG cannot carry alpha and flattening would change what the model sees; opaque → JPEG.
  Lossy WebP with a lossless alpha plane is chosen over lossless WebP: on screenshots and
  photos it is several times smaller at the ladder's qualities, and edges of the alpha mask
  stay exact.
- the ladder tries each quality in order and stops at the first output within the byte
  target; when none fits, the smallest output wins (a request with a slightly large image
  beats no image).

Everything that changes output bytes is part of :class:`EncoderPolicy` and of its
``fingerprint``, which feeds variant ids: change a field and old cache entries are simply
never looked up again. Bump ``POLICY_VERSION`` when the *code* changes output.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image

from dcode.media.bands import resize_banded
from dcode.media.facts import EXTENSIONS, MEDIA_TYPES

POLICY_VERSION = 2
"""1: first release. 2: large images are resampled in bands (``bands``), which can move a
sample by a level at rare filter-tap ties."""

_RESAMPLING = {
    "lanczos": Image.Resampling.LANCZOS,
    "bicubic": Image.Resampling.BICUBIC,
    "hamming": Image.Resampling.HAMMING,
    "bilinear": Image.Resampling.BILINEAR,
    "box": Image.Resampling.BOX,
}


@dataclass(frozen=True, slots=True)
class EncoderPolicy:
    """Encoder parameters shared by normalization and request variants.

    ``master_resample`` shrinks sources into the normalized attachment and
    ``variant_resample`` shrinks attachments for a route. They differ on purpose:
    - the master is an intermediate that variants shrink further. Measured on a 4K IDE
      screenshot, the master's filter moves the final 640k variant by under 0.5 dB PSNR
      (JPEG q85 itself caps it near 38 dB), while area averaging (``box``) resamples 2-3×
      faster than Lanczos and adds no ringing around text. The master itself stays within
      ~40 dB of a Lanczos master, below what its own JPEG encoding changes.
    - the variant is what the model reads, so it gets the sharpest filter (Lanczos).
    """

    qualities: tuple[int, ...] = (85, 75, 60)
    webp_method: int = 0
    webp_alpha_quality: int = 100
    jpeg_subsampling: str = "4:2:0"
    master_resample: str = "box"
    variant_resample: str = "lanczos"

    def __post_init__(self) -> None:
        if not self.qualities or any(not 1 <= q <= 100 for q in self.qualities):
            raise ValueError(f"qualities must be 1..100 and non-empty, got {self.qualities}")
        for name in (self.master_resample, self.variant_resample):
            if name not in _RESAMPLING:
                raise ValueError(f"unknown resample filter {name!r}")

    def fingerprint(self) -> dict[str, object]:
        """Everything that determines output bytes, as JSON-ready data (for variant ids)."""
        return {
            "policy_version": POLICY_VERSION,
            "qualities": list(self.qualities),
            "webp_method": self.webp_method,
            "webp_alpha_quality": self.webp_alpha_quality,
            "jpeg_subsampling": self.jpeg_subsampling,
            "variant_resample": self.variant_resample,
        }


DEFAULT_POLICY = EncoderPolicy()


@dataclass(frozen=True, slots=True)
class Encoded:
    """One encoder output and the facts the encoder intended it to have."""

    data: bytes
    format: str
    width: int
    height: int
    alpha: bool
    quality: int | None
    fits: bool

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.format]


def resize(im: Image.Image, size: tuple[int, int], filter_name: str) -> Image.Image:
    """Resample to ``size``, alpha premultiplied so that edges do not darken; large outputs
    are computed in parallel bands (``bands.resize_banded``)."""
    if im.size == size:
        return im
    return resize_banded(im, size, _RESAMPLING[filter_name])


def encode_ladder(im: Image.Image, max_bytes: int, policy: EncoderPolicy) -> Encoded:
    """Encode an 8-bit ``RGB`` (→ JPEG) or ``RGBA`` (→ WebP) image down the quality ladder."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be > 0, got {max_bytes}")
    alpha = im.mode == "RGBA"
    if im.mode not in ("RGB", "RGBA"):
        raise ValueError(f"encode_ladder takes RGB or RGBA, got {im.mode}")
    smallest: Encoded | None = None
    for quality in policy.qualities:
        data = _encode(im, quality, alpha, policy)
        fits = len(data) <= max_bytes
        out = Encoded(data, "WEBP" if alpha else "JPEG", im.width, im.height, alpha, quality, fits)
        if fits:
            return out
        if smallest is None or len(data) < len(smallest.data):
            smallest = out
    assert smallest is not None  # qualities is non-empty (validated by EncoderPolicy)
    return smallest


def _encode(im: Image.Image, quality: int, alpha: bool, policy: EncoderPolicy) -> bytes:
    buf = io.BytesIO()
    if alpha:
        im.save(
            buf,
            "WEBP",
            quality=quality,
            method=policy.webp_method,
            alpha_quality=policy.webp_alpha_quality,
        )
    else:
        im.save(buf, "JPEG", quality=quality, subsampling=policy.jpeg_subsampling)
    return buf.getvalue()
