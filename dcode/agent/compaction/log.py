"""What each compaction of a thread showed, kept with the thread, so a resumed transcript shows
the same lines where they came: the reason it started, what it did, and where in the whole
history it happened. Plain dicts, so the checkpointer stores them as they are."""

from __future__ import annotations

from collections.abc import Iterator

from dcode.agent.events import CompactionFinished, CompactionStarted, Event
from dcode.agent.json_types import JsonObject


def logged(at: int, started: CompactionStarted, finished: CompactionFinished) -> JsonObject:
    """The record of a compaction made when the whole history held ``at`` messages."""
    return {
        "at": at,
        "reason": started.reason,
        "summarized": finished.messages_summarized,
        "before": finished.tokens_before,
        "after": finished.tokens_after,
        "kept": finished.messages_kept,
        "archive": finished.archive_path,
    }


def log_of(compaction: object) -> list[JsonObject]:
    """The records a thread's compaction state holds; none when it holds none (or is not one)."""
    records = compaction.get("shown") if isinstance(compaction, dict) else None
    return (
        [record for record in records if isinstance(record, dict)]
        if isinstance(records, list)
        else []
    )


def replayed(records: list[JsonObject]) -> Iterator[tuple[int, list[Event]]]:
    """Each record as the events the live stream gave, with where they came in the history;
    a record that is not one is left out."""
    for record in records:
        match record:
            case {
                "at": int(at),
                "reason": str(reason),
                "summarized": int(summarized),
                "before": int(before),
                "after": int(after),
                "kept": int(kept),
            }:
                archive = record.get("archive")
                finished = CompactionFinished(
                    summarized, before, after, archive if isinstance(archive, str) else None, kept
                )
                yield at, [CompactionStarted(reason), finished]
