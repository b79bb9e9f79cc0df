"""A running command's output, shown while it runs: ``ToolOutputTail`` events, throttled.

The shell hands every piece of output to ``add`` as it arrives, on the event loop's thread; a
small task of the call's own puts out the tail at most once every ``INTERVAL_S`` (the first
piece at once), so a command printing a hundred thousand lines costs the run a few events a
second, not one per line. The task is started and ended with the call (``async with``), in the
call's context, where the run's stream writer is; nothing is put out after the call returns,
so the call's result is always the last word on its line.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType

from dcode.agent.backends.capture import OutputTail
from dcode.agent.events import ToolOutputTail
from dcode.agent.tools.factory import CallSite

log = logging.getLogger(__name__)

INTERVAL_S = 0.1
"""At most this often a call's tail is put out (ten times a second)."""


class LiveOutput:
    def __init__(self, call: CallSite, *, interval: float = INTERVAL_S) -> None:
        self._call = call
        self._interval = interval
        self._tail = OutputTail()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.sent = 0
        """Events put out so far."""

    def add(self, text: str) -> None:
        """A piece of the command's output (the shell's ``OutputSink``)."""
        self._tail.add(text)
        self._changed.set()

    async def __aenter__(self) -> LiveOutput:
        if self._call.live:
            self._task = asyncio.create_task(self._pump(), name=f"output of {self._call.call_id}")
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._task is None:
            return
        self._task.cancel()
        await asyncio.wait([self._task])  # a cancel of the call itself still goes through

    async def _pump(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            event = ToolOutputTail(
                self._call.call_id, self._tail.text(), self._tail.lines, agent=self._call.agent
            )
            try:
                self._call.emit(event)
            except Exception:  # showing the output must never fail the call
                log.debug("the output of %s is no longer shown", self._call.call_id, exc_info=True)
                return
            self.sent += 1
            await asyncio.sleep(self._interval)
