"""When the compaction tiers fire, and how much they keep: thresholds in tokens, in messages or
as a share of the model's input window.

Tier 1 (argument truncation) fires at ``truncate_at``, below tier 2 (summarization) at
``summarize_at``, so the cheap cut comes first and often spares a summary; both keep the newest
``keep`` verbatim. Set in config as ``truncate_at``, ``compact_at`` and ``compact_keep``: a
number is tokens (``120000``), a percentage or a number up to 1 is a share of the window
(``"85%"``, ``0.85``), and ``"200 messages"`` is a count of messages.

Settings only: whether a conversation reaches a threshold is measured in
``dcode.agent.compaction.thresholds``, where the messages and the token counter are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

EXPECTED = 'a number of tokens (120000), a share of the window ("85%" or 0.85) or a count of messages ("200 messages")'
_MESSAGES = re.compile(r"^\s*(\d+)\s*messages?\s*$", re.IGNORECASE)
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


class Unit(StrEnum):
    TOKENS = "tokens"
    MESSAGES = "messages"
    FRACTION = "fraction"


@dataclass(frozen=True, slots=True)
class Threshold:
    unit: Unit
    value: float  # a count (tokens, messages), or a share of the window in (0, 1]

    @classmethod
    def parse(cls, raw: object) -> Threshold:
        """From config: ``120000`` (tokens), ``"85%"`` or ``0.85`` (of the window), ``"200
        messages"``. Raises ValueError on anything else, a zero or a share above 100 %."""
        if isinstance(raw, bool):
            raise ValueError(raw)
        if isinstance(raw, str):
            if found := _MESSAGES.match(raw):
                return cls._checked(Unit.MESSAGES, int(found.group(1)))
            if found := _PERCENT.match(raw):
                return cls._checked(Unit.FRACTION, float(found.group(1)) / 100)
            raw = float(raw)
        if isinstance(raw, int | float):
            if 0 < raw <= 1 and not (isinstance(raw, int) and raw == 1):
                return cls._checked(Unit.FRACTION, float(raw))
            if float(raw).is_integer():
                return cls._checked(Unit.TOKENS, int(raw))
        raise ValueError(raw)

    @classmethod
    def _checked(cls, unit: Unit, value: float) -> Threshold:
        if value <= 0 or (unit is Unit.FRACTION and value > 1):
            raise ValueError(value)
        return cls(unit, value)

    def limit(self, window: int) -> int:
        """The threshold as a count: of messages for ``MESSAGES``, else of tokens."""
        if self.unit is Unit.FRACTION:
            return max(1, int(window * self.value))
        return int(self.value)

    def __str__(self) -> str:
        match self.unit:
            case Unit.FRACTION:
                return f"{self.value * 100:g}%"
            case Unit.MESSAGES:
                return f"{int(self.value)} messages"
        return f"{int(self.value)} tokens"


SUMMARIZE_AT = Threshold(Unit.FRACTION, 0.85)
KEEP = Threshold(Unit.FRACTION, 0.10)
TRUNCATE_AT = Threshold(Unit.FRACTION, 0.70)


@dataclass(frozen=True, slots=True)
class Triggers:
    summarize_at: Threshold = SUMMARIZE_AT
    keep: Threshold = KEEP
    truncate_at: Threshold = TRUNCATE_AT

    def problem(self) -> str | None:
        """Why these triggers do not hold together (tier 1 not below tier 2, in the same unit);
        None when they do."""
        tier1, tier2 = self.truncate_at, self.summarize_at
        if tier1.unit is tier2.unit and tier1.value >= tier2.value:
            return f"truncate_at ({tier1}) must be below compact_at ({tier2}): tier 1's cut comes before a summary"
        return None
