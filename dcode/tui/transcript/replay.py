"""A resumed session's transcript: its saved thread replayed through the live turn's model.

The agent replays a saved thread as the events the live stream gave for them
(``dcode.agent.saved_thread.replay``), a ``task`` call's subagent included, its events tagged
with its path; ``TranscriptModel`` takes them as it takes a live turn's. Only data is built
here, so a long session costs a list of small objects; the transcript mounts the last window
of it, and the next turn goes on in the same model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dcode.tui.transcript.model import TranscriptModel

if TYPE_CHECKING:
    from dcode.agent.store.base import SessionStore


def transcript_entries(
    messages: Iterable[object],
    *,
    session_id: str = "",
    store: SessionStore | None = None,
    live: bool = False,
) -> TranscriptModel:
    """The transcript of a saved thread's messages; with the session's id and store, each
    ``task`` call holds what its subagent did, and the compactions' lines are where they came.
    ``live``: a run of the thread goes on (a server's, joined next): its open calls still run."""
    from dcode.agent.saved_thread import replay, thread_reader

    reader = thread_reader(store) if store is not None and session_id else None
    compactions = store.compaction_log(session_id) if store is not None and session_id else []
    return TranscriptModel.replayed(
        replay(
            messages, thread_id=session_id, read_thread=reader, compactions=compactions, live=live
        )
    )
