"""Request-size offload: which of the oldest images to leave out of a request (pure functions).

A provider refuses a request whose images exceed its byte or count cap, so the oldest images
are dropped, as placeholders, from the *request* (the persisted history is never rewritten).
They are dropped in whole steps rather than one at a time: the dropped prefix then stays
identical from turn to turn until the history grows by a full step, and the provider's prompt
cache, which keys on the request prefix, stays warm.

- Bytes: limit ``L``, step ``S = L/2``. When the total exceeds ``L``, let
  ``k = ceil((total − L)/S)``; drop the shortest oldest-first prefix whose bytes exceed
  ``k·S``.
- Count: limit ``N``, step 20. When there are more than ``N``, drop ``ceil((n − N)/20)·20``.
- The longer of the two prefixes wins.

Worked example (1 MiB each, L = 128 MiB): 129 images → k = 1 → the oldest 65 go (65 MiB > 64),
64 MiB stay; the same 65 stay dropped up to 192 images, and at 193 the prefix jumps to 129.

Two passes, so that nothing has to be read before it is known to be needed:
1. ``plan_offload`` over *upper bounds*, ``min(attachment bytes, route byte cap)``
   (``upper_bound``), known from reference blocks alone;
2. ``refine_offload`` over the exact lengths of the images pass 1 kept (pass-1-dropped
   images keep their bounds; a kept image that turned out missing counts 0 because it becomes
   a placeholder). The result is never shorter than pass 1's prefix, so a dropped image is
   never re-added, and a missing or corrupt attachment that pass 1 dropped is never read and
   can never block the request.

Sizes are whatever the caller counts against the limit (raw bytes, or base64 length via
``base64_length``), as long as limits and sizes use the same unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class OffloadLimits:
    max_bytes: int = 128 * MiB
    max_images: int = 600
    count_step: int = 20

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_images", "count_step"):
            if getattr(self, name) <= 0:
                raise ValueError(f"OffloadLimits.{name} must be > 0")

    @property
    def byte_step(self) -> int:
        return max(1, self.max_bytes // 2)


DEFAULT_OFFLOAD = OffloadLimits()


@dataclass(frozen=True, slots=True)
class OffloadPlan:
    """Drop the ``drop`` oldest images; ``kept_bytes`` is what the rest add up to."""

    drop: int
    total_bytes: int
    kept_bytes: int
    by: Literal["none", "bytes", "count"]

    @property
    def dropped(self) -> range:
        return range(self.drop)


def upper_bound(attachment_bytes: int, route_max_bytes: int) -> int:
    """Pass-1 size of an image before anything is read: a variant is at most the route's cap,
    and a passthrough variant is the attachment itself."""
    return min(attachment_bytes, route_max_bytes)


def base64_length(raw_bytes: int) -> int:
    return 4 * math.ceil(raw_bytes / 3)


def byte_prefix(sizes: Sequence[int], limits: OffloadLimits = DEFAULT_OFFLOAD) -> int:
    """How many oldest images the byte rule drops."""
    total = sum(sizes)
    if total <= limits.max_bytes:
        return 0
    step = limits.byte_step
    threshold = math.ceil((total - limits.max_bytes) / step) * step
    running = 0
    for index, size in enumerate(sizes):
        running += size
        if running > threshold:
            return index + 1
    return len(sizes)


def count_prefix(count: int, limits: OffloadLimits = DEFAULT_OFFLOAD) -> int:
    """How many oldest images the count rule drops."""
    if count <= limits.max_images:
        return 0
    steps = math.ceil((count - limits.max_images) / limits.count_step)
    return min(count, steps * limits.count_step)


def plan_offload(sizes: Sequence[int], limits: OffloadLimits = DEFAULT_OFFLOAD) -> OffloadPlan:
    """Pass 1 (or any single pass): the longer of the byte and count prefixes."""
    if any(size < 0 for size in sizes):
        raise ValueError("image sizes must be >= 0")
    by_bytes = byte_prefix(sizes, limits)
    by_count = count_prefix(len(sizes), limits)
    drop = max(by_bytes, by_count)
    by: Literal["none", "bytes", "count"] = (
        "none" if drop == 0 else ("bytes" if by_bytes >= by_count else "count")
    )
    total = sum(sizes)
    return OffloadPlan(drop=drop, total_bytes=total, kept_bytes=total - sum(sizes[:drop]), by=by)


def refine_offload(
    first: OffloadPlan,
    bounds: Sequence[int],
    exact: Sequence[int | None],
    limits: OffloadLimits = DEFAULT_OFFLOAD,
) -> OffloadPlan:
    """Pass 2: re-plan with exact lengths for the images ``first`` kept (None = unavailable,
    counted as 0); the dropped prefix only ever grows."""
    if len(bounds) != len(exact):
        raise ValueError("bounds and exact must describe the same images")
    sizes = [bounds[i] if i < first.drop else (exact[i] or 0) for i in range(len(bounds))]
    second = plan_offload(sizes, limits)
    if second.drop >= first.drop:
        return second
    return OffloadPlan(
        drop=first.drop,
        total_bytes=second.total_bytes,
        kept_bytes=second.total_bytes - sum(sizes[: first.drop]),
        by=first.by,
    )


def offload_two_pass(
    bounds: Sequence[int],
    measure: Callable[[int], int | None],
    limits: OffloadLimits = DEFAULT_OFFLOAD,
) -> OffloadPlan:
    """Both passes; ``measure(i)`` materializes image ``i`` and returns its exact length (or
    None when unavailable). It is called only for images that pass 1 kept."""
    first = plan_offload(bounds, limits)
    exact: list[int | None] = [None if i < first.drop else measure(i) for i in range(len(bounds))]
    return refine_offload(first, bounds, exact, limits)


def placeholder_text(
    name: str, path: str, *, width: int | None = None, height: int | None = None
) -> str:
    """The one line that stands in for an image left out of this request."""
    size = f" ({width}x{height})" if width and height else ""
    return (
        f"[image {name}{size} omitted from this request to keep it within the provider's "
        f"size limits; to look at it again, call read_file with file_path={path}]"
    )
