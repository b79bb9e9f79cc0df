"""The session's calibration: how the provider's counts compare with dcode's.

After each model call, the provider's input tokens for the request are set against dcode's
count of that same request (before calibration). The ratio is smoothed (an exponential
average, so one odd request does not swing it) and bounded (a provider figure that is far off,
such as one that leaves out the tool schemas, cannot make estimates absurd). Estimates are
multiplied by it; before any report it is 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SMOOTHING = 0.5  # weight of the newest ratio
# Bounds of the factor: the BPEs of current models (DeepSeek's, Qwen's, Llama's) count
# within about a third of o200k on code, prose and Chinese alike.
LOW, HIGH = 0.67, 1.5


@dataclass(slots=True)
class Calibration:
    factor: float = 1.0
    samples: int = 0
    last_reported: int = 0
    last_counted: int = 0

    def observe(self, reported: int, counted: int) -> None:
        """One request: the provider reported ``reported`` input tokens, dcode counted ``counted``."""
        if reported <= 0 or counted <= 0:
            return
        ratio = min(HIGH, max(LOW, reported / counted))
        self.factor = (
            ratio if self.samples == 0 else (1 - SMOOTHING) * self.factor + SMOOTHING * ratio
        )
        self.samples += 1
        self.last_reported, self.last_counted = reported, counted

    def apply(self, tokens: int) -> int:
        return tokens if self.samples == 0 else math.ceil(tokens * self.factor)

    @property
    def error(self) -> float | None:
        """How far dcode's last count was from the provider's, as a fraction of it."""
        if not self.samples:
            return None
        return (self.last_counted - self.last_reported) / self.last_reported
