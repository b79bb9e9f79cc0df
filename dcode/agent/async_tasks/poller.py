"""The session's poller: one background loop that follows its async tasks' remote runs, so a
screen shows a task finish (or fail, or its server go away) without the model asking.

It learns of a task from the ``AsyncTaskStatus`` events the tools emit (``watch``), asks each
live task's server for its run's status every ``POLL_SECONDS``, and emits the same event type
when a status changes. A task in a final state is no longer asked about, and the loop ends when
none is live (a new event starts it again). A server that fails to answer is one line in the
event's ``error``, not an exception: the task stays followed, asked less often while it fails.
The statuses it sees are for the screen only: the task records in the thread's state change
when the model calls a tool, as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from dcode.agent.async_tasks.records import is_live
from dcode.agent.async_tasks.remote import RemoteAgents, RemoteError, failure_line
from dcode.agent.events import AsyncTaskStatus

log = logging.getLogger(__name__)

POLL_SECONDS = 3.0
MAX_BACKOFF_SECONDS = 60.0
"""The longest wait between two requests to a server that keeps failing."""

Emit = Callable[[AsyncTaskStatus], Awaitable[None]]


@dataclass(eq=False)
class _Watched:
    seen: AsyncTaskStatus
    due: float
    """When it is next asked about (``time.monotonic``)."""
    failures: int = 0


class TaskPoller:
    """The live tasks of one session, and the one loop that asks their servers about them."""

    def __init__(
        self,
        remote: RemoteAgents,
        emit: Emit,
        *,
        interval: float = POLL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._remote = remote
        self._emit = emit
        self._interval = interval
        self._clock = clock
        self._watched: dict[str, _Watched] = {}
        self._loop: asyncio.Task[None] | None = None

    @property
    def running(self) -> int:
        """The tasks still running as last seen (a server that does not answer not counted)."""
        return sum(1 for item in self._watched.values() if not item.seen.error)

    def watch(self, event: AsyncTaskStatus) -> None:
        """The newest status of a task, from a tool (or this poller): followed while live."""
        current = self._watched.get(event.task_id)
        if current is not None and current.seen is event:
            return  # its own, fed back
        if not is_live(event.status):
            self._watched.pop(event.task_id, None)
            return
        self._watched[event.task_id] = _Watched(event, self._clock() + self._interval)
        if self._loop is None:
            self._loop = asyncio.get_running_loop().create_task(self._run())

    def forget(self) -> None:
        """Follow nothing more (the screen has left the session)."""
        self._watched.clear()

    async def aclose(self) -> None:
        self._watched.clear()
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)

    async def _run(self) -> None:
        try:
            while self._watched:
                await asyncio.sleep(self._interval)
                now = self._clock()
                due = [item for item in self._watched.values() if item.due <= now]
                await asyncio.gather(*(self._poll(item) for item in due))
        finally:
            if self._loop is asyncio.current_task():
                self._loop = None

    async def _poll(self, item: _Watched) -> None:
        seen = item.seen
        status, error = await self._ask(seen)
        if self._watched.get(seen.task_id) is not item:
            return  # a tool told a newer status meanwhile (an update's new run, a cancel)
        if error:
            item.failures += 1
            backoff = self._interval * 2**item.failures
            item.due = self._clock() + min(MAX_BACKOFF_SECONDS, backoff)
            if error == seen.error:
                return
            news = replace(seen, error=error, call_id="")
        else:
            item.failures, item.due = 0, self._clock() + self._interval
            if status == seen.status and not seen.error:
                return
            news = replace(seen, status=status, error="", call_id="")
        item.seen = news
        if not is_live(news.status):
            del self._watched[seen.task_id]
        try:
            await self._emit(news)
        except Exception:  # the loop goes on for the other tasks
            log.warning("showing an async task's status failed", exc_info=True)

    async def _ask(self, seen: AsyncTaskStatus) -> tuple[str, str]:
        """The run's status now, or the one line saying why its server could not tell."""
        try:
            return await self._remote.run_status(seen.agent_name, seen.task_id, seen.run_id), ""
        except RemoteError as exc:
            return seen.status, str(exc)
        except Exception as exc:  # noqa: BLE001 - the SDK raises httpx's and its own errors untyped
            agent = self._remote.agent(seen.agent_name)
            return seen.status, failure_line(agent, exc, task_id=seen.task_id)
