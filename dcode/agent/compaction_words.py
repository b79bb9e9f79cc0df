"""What a compaction did, in words: one wording for the TUI's line, ``/offload``'s and the
``compact_conversation`` tool's result, so the user and the model read the same facts."""

from __future__ import annotations

from dcode.agent.events import CompactionFinished, CompactionRefused


def _messages(count: int) -> str:
    return "1 message" if count == 1 else f"{count:,} messages"


def kept_words(kept: int) -> str:
    return (
        "kept the last message verbatim"
        if kept == 1
        else f"kept the last {kept:,} messages verbatim"
    )


def compacted_words(done: CompactionFinished, *, with_archive: bool = True) -> str:
    """``summarized 12 messages: history 8,400 → 1,200 tokens; kept the last 4 messages
    verbatim``, then where the summarized messages are archived (or that they could not be).
    The figures are the messages' (the system prompt and tools, the same before and after, are
    not in them)."""
    line = (
        f"summarized {_messages(done.messages_summarized)}: history {done.tokens_before:,} → {done.tokens_after:,} tokens; "
        f"{kept_words(done.messages_kept)}"
    )
    if not with_archive:
        return line
    if done.archive_path is None:
        return f"{line}; the older messages could not be archived (they are only in the summary)"
    return f"{line}; the full history is in {done.archive_path}"


def refused_words(refused: CompactionRefused) -> str:
    """Why a compaction was refused, and that nothing changed (without a leading verdict)."""
    return (
        f"summarizing {_messages(refused.messages_summarized)} would take the history from "
        f"{refused.tokens_before:,} to {refused.tokens_after:,} tokens ({refused.reason}); "
        "the conversation and its archive are unchanged"
    )
