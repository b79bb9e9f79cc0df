"""The one token counter the compaction tiers decide by.

Tier 1's and tier 2's triggers, and the before → after figures a compaction reports (and
refuses by), all count through ``count_messages``, so a better tokenizer changes them together.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately


def count_messages(messages: Sequence[BaseMessage]) -> int:
    """The estimated tokens of ``messages`` as they would be sent."""
    return count_tokens_approximately(list(messages))
