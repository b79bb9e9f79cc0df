"""The on-disk cache of request variants, trusted only after a header check.

Layout under the store root::

    variants/ab/<variant id>.jpg|webp   the encoded bytes
    variants/ab/<variant id>.json       {"bytes": n, "fits": bool} written after the bytes

A hit costs a ``stat``, a small JSON read and a lazy ``Image.open`` (headers only, no pixel
decode). It is a hit only when the file's size equals the recorded size, the size respects
the route's byte cap (unless the ladder recorded that no rung could), and the header shows
the planned format, dimensions, 8-bit samples and alpha. Anything else (garbage, a truncated
write, a 16-bit or CMYK file, wrong dimensions, unexpected alpha, an oversized file) is a
miss, and the caller regenerates and overwrites the entry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dcode.media.derive import VariantPlan
from dcode.media.encode import Encoded
from dcode.media.facts import EXTENSIONS, FactsMismatch, check_output
from dcode.settings.private_files import READ_ONLY_FILE, write_private


@dataclass(frozen=True, slots=True)
class CachedVariant:
    path: Path
    byte_size: int
    fits: bool


class VariantCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, plan: VariantPlan) -> Path:
        vid = plan.variant_id
        return self.root / vid[:2] / f"{vid}.{EXTENSIONS[plan.format]}"

    def _meta_path(self, plan: VariantPlan) -> Path:
        vid = plan.variant_id
        return self.root / vid[:2] / f"{vid}.json"

    def lookup(self, plan: VariantPlan) -> CachedVariant | None:
        """The cached entry for ``plan`` if it passes the header check, else None."""
        path = self.path_for(plan)
        try:
            meta = json.loads(self._meta_path(plan).read_bytes())
            recorded, fits = int(meta["bytes"]), bool(meta["fits"])
            if path.stat().st_size != recorded or (fits and recorded > plan.max_bytes):
                return None
            head = _read_head(path, recorded)
            check_output(
                head,
                fmt=plan.format,
                width=plan.width,
                height=plan.height,
                alpha=plan.alpha,
                max_bytes=None,
            )
        except (OSError, ValueError, KeyError, TypeError, FactsMismatch):
            return None
        return CachedVariant(path, recorded, fits)

    def put(self, plan: VariantPlan, encoded: Encoded) -> CachedVariant:
        """Store ``encoded``: bytes first, then the record that makes them a valid entry."""
        path = self.path_for(plan)
        write_private(path, encoded.data, mode=READ_ONLY_FILE)
        meta = {"bytes": len(encoded.data), "fits": encoded.fits}
        write_private(self._meta_path(plan), json.dumps(meta).encode())
        return CachedVariant(path, len(encoded.data), encoded.fits)


def _read_head(path: Path, size: int) -> bytes:
    """Enough of the file for Pillow to parse the header without decoding pixels.

    JPEG and WebP headers sit in the first few KB; WebP's parser wants the whole RIFF payload
    it declares, so files up to 64 KB are read whole and larger WebPs get their declared
    length (the decode itself never happens: ``Image.open`` stays lazy).
    """
    with path.open("rb") as fh:
        if path.suffix == ".webp" or size <= 65536:
            return fh.read()
        return fh.read(65536)
