"""A served session's writes to the session store, made behind its runs rather than in them.

A served run notes its prompt (``TurnRecord``) and keeps each model call's charge
(``UsageBook``) in the server's session store as it goes. Each write is a SQLite transaction
with its commit, or a PostgreSQL round trip: awaited in the run, it held up every step (some
20 ms a step on Aegra, measured on 2 busy cores). ``WriteBehind`` starts each write at once, in
a task, and the run goes on: the writes of one session run one after the other, in the order
they were made, and what reads the session's spend (the next run's budget, ``/cost``) waits for
those still under way (``settled``), so that it never misses one. A write that fails is logged
in the server's log; the run it came from has gone on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class WriteBehind:
    """One session's store writes, in order, each in a thread, none awaited by the run that
    made it."""

    def __init__(self) -> None:
        self._last: asyncio.Task[None] | None = None

    def add(self, write: Callable[[], None]) -> None:
        """Start ``write`` (a blocking call) once the writes before it are done."""
        self._last = asyncio.get_running_loop().create_task(self._after(self._pending(), write))

    async def settled(self) -> None:
        """Once the writes made so far are done (failed ones included: they were logged)."""
        last = self._pending()
        if last is not None:
            await asyncio.wait([last])

    def _pending(self) -> asyncio.Task[None] | None:
        """The last write, while it is under way (a finished one, or one of another event
        loop's, is nothing to wait for)."""
        last = self._last
        if last is None or last.done() or last.get_loop() is not asyncio.get_running_loop():
            return None
        return last

    @staticmethod
    async def _after(previous: asyncio.Task[None] | None, write: Callable[[], None]) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        try:
            await asyncio.to_thread(write)
        except Exception:  # the run that made it has gone on: the log says it
            log.exception("a served session's write to the session store failed")
