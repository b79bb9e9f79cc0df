"""When the compaction tiers fire, and how much they keep: thresholds in tokens, in messages or
as a share of the model's input window.

Tier 1 (argument truncation) fires at ``truncate_at``, below tier 2 (summarization) at
``summarize_at``, so the cheap cut comes first and often spares a summary; both keep the newest
``keep`` verbatim. Set in config as ``truncate_at``, ``compact_at`` and ``compact_keep``: a
number is tokens (``120000``), a percentage or a number up to 1 is a share of the window
(``"85%"``, ``0.85``), and ``"200 messages"`` is a count of messages.

Light on purpose (``dcode.settings.config`` imports it): the token counter is imported when counting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from dcode.context.tokens.counter import TokenCounter

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
    def parse(cls, raw: Any) -> Threshold:
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

    def reached(
        self, messages: Sequence[BaseMessage], window: int, tokens: int | None = None, counter: TokenCounter | None = None
    ) -> bool:
        """Whether the request ``messages`` make reaches the threshold (counted by ``counter``,
        the session's, with the last request's system message and tools; without one, roughly)."""
        if self.unit is Unit.MESSAGES:
            return len(messages) >= self.limit(window)
        if tokens is None and self.known_under(messages, window, counter):
            return False  # known from lengths: the encoding need not be loaded
        if tokens is None:
            from dcode.agent.token_count import count_request

            tokens = count_request(messages, counter)
        return tokens >= self.limit(window)

    def known_under(self, messages: Sequence[BaseMessage], window: int, counter: TokenCounter | None = None) -> bool:
        """Whether the request ``messages`` make is below the threshold, known without counting
        tokens: by the number of messages, or by the counter's bound from their lengths."""
        if self.unit is Unit.MESSAGES:
            return len(messages) < self.limit(window)
        return counter is not None and counter.surely_under(self.limit(window), messages)

    def keep_from(self, messages: Sequence[BaseMessage], window: int, counter: TokenCounter | None = None) -> int:
        """As a keep window: the index of the oldest message kept. Counted in tokens, messages
        are kept from the newest back while they fit."""
        if self.unit is Unit.MESSAGES:
            return max(0, len(messages) - self.limit(window))
        from dcode.agent.token_count import count_messages

        budget, used = self.limit(window), 0
        for index in range(len(messages) - 1, -1, -1):
            used += count_messages([messages[index]], counter)
            if used > budget:
                return index + 1
        return 0

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
