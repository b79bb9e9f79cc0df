"""The one token counter the compaction tiers decide by.

Tier 1's and tier 2's triggers, and the before → after figures a compaction reports (and
refuses by), all count through these two functions, with the session's ``TokenCounter``
(``dcode.context.tokens``: the model's BPE, the chat format, tool schemas, images, calibration).
Without a counter (a caller outside a session) they fall back to langchain's rough estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

if TYPE_CHECKING:
    from dcode.context.tokens.counter import TokenCounter


def count_messages(messages: Sequence[BaseMessage], counter: TokenCounter | None = None) -> int:
    """The estimated tokens of ``messages`` themselves, as they would be sent."""
    if counter is None:
        return count_tokens_approximately(list(messages))
    return sum(counter.estimate_message(message) for message in messages)


def count_request(messages: Sequence[BaseMessage], counter: TokenCounter | None = None) -> int:
    """The estimated tokens of the request ``messages`` make: with a counter, the last request's
    system message, tools and reply priming too."""
    if counter is None:
        return count_tokens_approximately(list(messages))
    return counter.estimate_request(messages)
