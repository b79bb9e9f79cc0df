"""The server's checkpointer (``langgraph.json``'s ``checkpointer``): dcode's session store.

A served session's checkpoints go where a local session's do: the SQLite file under
``$DCODE_HOME``, or PostgreSQL with ``DCODE_DATABASE_URL``. The server enters this context
manager when it starts and leaves it when it stops, which closes the host's engines. Only
``langgraph dev`` loads it (Aegra keeps its own checkpoints), so it is also where that server's
queue is made to start a new run at once (``runtime_internals``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver

from dcode.server.host import ServedHost
from dcode.server.runtime_internals import wake_queue_on_new_runs


@asynccontextmanager
async def session_store() -> AsyncIterator[BaseCheckpointSaver]:
    wake_queue_on_new_runs()
    host = await ServedHost.open()
    try:
        yield host.checkpointer
    finally:
        await host.close()
