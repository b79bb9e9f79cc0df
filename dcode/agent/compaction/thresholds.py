"""Whether a conversation reaches a compaction threshold, and where a keep window starts.

The thresholds themselves are settings (``dcode.settings.compaction_triggers``); measuring one
takes the messages and the session's token counter, which belong to the agent.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from dcode.agent.token_count import count_messages, count_request
from dcode.context.tokens.counter import TokenCounter
from dcode.settings.compaction_triggers import Threshold, Unit


def reached(
    threshold: Threshold,
    messages: Sequence[BaseMessage],
    window: int,
    tokens: int | None = None,
    counter: TokenCounter | None = None,
) -> bool:
    """Whether the request ``messages`` make reaches ``threshold`` (counted by ``counter``, the
    session's, with the last request's system message and tools; without one, roughly)."""
    if threshold.unit is Unit.MESSAGES:
        return len(messages) >= threshold.limit(window)
    if tokens is None and known_under(threshold, messages, window, counter):
        return False  # known from lengths: the encoding need not be loaded
    if tokens is None:
        tokens = count_request(messages, counter)
    return tokens >= threshold.limit(window)


def known_under(
    threshold: Threshold,
    messages: Sequence[BaseMessage],
    window: int,
    counter: TokenCounter | None = None,
) -> bool:
    """Whether the request ``messages`` make is below ``threshold``, known without counting
    tokens: by the number of messages, or by the counter's bound from their lengths."""
    if threshold.unit is Unit.MESSAGES:
        return len(messages) < threshold.limit(window)
    return counter is not None and counter.surely_under(threshold.limit(window), messages)


def keep_from(
    keep: Threshold,
    messages: Sequence[BaseMessage],
    window: int,
    counter: TokenCounter | None = None,
) -> int:
    """``keep`` as a keep window: the index of the oldest message kept. Counted in tokens,
    messages are kept from the newest back while they fit."""
    if keep.unit is Unit.MESSAGES:
        return max(0, len(messages) - keep.limit(window))
    budget, used = keep.limit(window), 0
    for index in range(len(messages) - 1, -1, -1):
        used += count_messages([messages[index]], counter)
        if used > budget:
            return index + 1
    return 0
