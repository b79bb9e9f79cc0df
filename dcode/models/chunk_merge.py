"""Merging a streamed answer's chunks into its message without quadratic copying.

langchain-core builds the final message of a streamed call with
``generate_from_stream``: ``first += list(rest)``, one ``add_ai_message_chunks`` over every
chunk. That merge grows each tool call's arguments (and, on the Responses wire, the matching
``function_call`` content block) with ``str +=`` on a dict value, which copies the whole string
every time: n deltas cost O(n²) bytes, 4 s for a 1 MB argument in 9-byte deltas and four times
that for 2 MB.

``BalancedMergeChunk`` is the first chunk of every stream of ``DcodeChatOpenAI``. Given the
list, it merges the chunks in groups of ``FANOUT`` with langchain's own ``+`` and then merges the
groups the same way, so every byte is copied about ``log_FANOUT(n)`` times, not ``n/2``. The
merge is langchain's, only grouped, which gives the same message because it is associative.

This relies on how langchain-core merges a stream (the first chunk's ``__add__`` with the list
of the rest), which is not a documented contract. It is listed in
``dcode/models/langchain_internals.py``, and ``tests/test_model_chunk_merge.py`` checks both that
the installed langchain still merges this way and that the grouped merge equals its flat one.
"""

from __future__ import annotations

from langchain_core.outputs import ChatGenerationChunk

FANOUT = 64


class BalancedMergeChunk(ChatGenerationChunk):
    """A generation chunk whose ``+ list`` merges in groups (see the module docstring)."""

    @classmethod
    def adopt(cls, chunk: ChatGenerationChunk) -> BalancedMergeChunk:
        return cls(message=chunk.message, generation_info=chunk.generation_info)

    def __add__(
        self, other: ChatGenerationChunk | list[ChatGenerationChunk]
    ) -> ChatGenerationChunk:
        if not isinstance(other, list) or len(other) < FANOUT:
            return super().__add__(other)
        level: list[ChatGenerationChunk] = [self, *other]
        while len(level) > FANOUT:
            level = [_flat(level[start : start + FANOUT]) for start in range(0, len(level), FANOUT)]
        return _flat(level)


def _flat(chunks: list[ChatGenerationChunk]) -> ChatGenerationChunk:
    """langchain's own merge of ``chunks``, bypassing the grouping (no recursion)."""
    first, rest = chunks[0], chunks[1:]
    return ChatGenerationChunk.__add__(first, rest) if rest else first
