"""The sampling grid: which instants of a window get a frame (shared by decoder and cache).

Targets are ``offset + k·interval`` inside ``[offset, offset + limit)``. Each target takes the
first frame at or after it, and a frame serves one target only: the next target is the first
grid point *after* that frame. So a late frame (2.5 s for the 2 s target) leaves the 4 s
target to the 4 s frame, and a long still (one frame, then a minute of nothing) is sent once.
Because the choice for a target depends on nothing but the target, cached choices replay
exactly whatever window they were first decoded for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EPSILON = 0.0005
"""Half a millisecond: labels are rounded to the millisecond, so closer than this is "at"."""


@dataclass(frozen=True, slots=True)
class Grid:
    offset: float
    limit: float
    interval: float

    @property
    def count(self) -> int:
        return max(1, math.ceil(self.limit / self.interval))

    def target(self, k: int) -> float:
        return self.offset + k * self.interval

    def reached(self, k: int, t: float) -> bool:
        """Whether a frame at ``t`` may serve target ``k``."""
        return t >= self.target(k) - EPSILON

    def next_index(self, k: int, t: float) -> int:
        """The target after the one a frame at ``t`` served: the first grid point after ``t``."""
        return max(k + 1, math.floor((t - self.offset + EPSILON) / self.interval) + 1)
