"""What the provider's usage figures say about its prompt cache.

langchain-openai reads the cached input tokens from either wire (Chat Completions'
``prompt_tokens_details.cached_tokens``, the Responses API's
``input_tokens_details.cached_tokens``) into ``usage_metadata["input_token_details"]``, as
``cache_read``, or ``<tier>_cache_read`` on the priority and flex service tiers.
"""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.messages.ai import UsageMetadata

CACHE_READ = "cache_read"
USAGE_ESTIMATED = "usage_estimated"
"""A message's ``response_metadata`` key: its usage figures are dcode's estimate, since the
provider sent none (``dcode/models/chat_model.py``)."""


def usage_is_estimated(response_metadata: Mapping[str, object] | None) -> bool:
    """Whether a message's usage figures are estimated rather than the provider's."""
    return bool((response_metadata or {}).get(USAGE_ESTIMATED))


def cached_input_tokens(usage: UsageMetadata | None) -> int:
    """The input tokens of ``usage`` (a message's ``usage_metadata``) that the provider read
    from its prompt cache; 0 when it reports none."""
    details = usage.get("input_token_details") if usage else None
    return sum(
        value
        for key, value in (details or {}).items()
        if isinstance(value, int) and (key == CACHE_READ or key.endswith(f"_{CACHE_READ}"))
    )
