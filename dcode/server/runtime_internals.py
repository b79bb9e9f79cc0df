"""The one place dcode touches the insides of ``langgraph dev``'s in-memory runtime
(``langgraph-runtime-inmem``, from the extra ``dcode[server]``): its queue's pickup of a new run.

That runtime's queue looks for pending runs every 0.5 s, and only for runs created before its
pause began, so a run waits 0.5 to 1 s before a worker starts it (``Runs.next``; no setting
or variable changes that). Every served turn, and every run resumed after an approval, paid it.
``wake_queue_on_new_runs`` makes the queue look as soon as a run is created (``Runs.put``) or
one ends (``Threads.set_joint_status``: the next run of its thread may start; a client that
starts it as soon as the stream ends is often quicker than the run's last write), and still
every 0.5 s otherwise (a run created for later, a retry). It is
installed in the server's process by the checkpointer ``dcode serve`` names, which only
``langgraph dev`` loads (Aegra keeps its own queue, with its own wake-up through Redis).

``PRIVATE_USES`` lists both names for ``tests/test_framework_internals.py``, which checks them
against the installed runtime.
"""

# Any: the runtime's functions are untyped

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Any

from dcode.framework_internals import PrivateUse

RUNTIME = "langgraph_runtime_inmem.ops"
IDLE_POLL_SECONDS = 0.5
"""How often the queue still looks when no run was created: the runtime's own pause."""
USER = "dcode/server/runtime_internals.py"
TESTS = (
    "tests/test_server_graph.py::test_a_new_run_starts_at_once_on_langgraph_dev",
    "tests/test_server_graph.py::test_a_turn_streams_the_answer_and_dcodes_events",
)

PRIVATE_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "langgraph-runtime-inmem",
        f"{RUNTIME}:Runs.next",
        (USER,),
        TESTS,
        parameters=("wait", "limit"),
        behaviour=(
            "the queue's scheduler calls Runs.next(wait=..., limit=...) on the class each time "
            "it looks for pending runs; wait=True pauses 0.5 s first, wait=False does not"
        ),
    ),
    PrivateUse(
        "langgraph-runtime-inmem",
        f"{RUNTIME}:Runs.put",
        (USER,),
        TESTS,
        behaviour="every new run is stored by Runs.put before it returns",
    ),
    PrivateUse(
        "langgraph-runtime-inmem",
        f"{RUNTIME}:Threads.set_joint_status",
        (USER,),
        TESTS,
        behaviour="a run that ends leaves the running state in Threads.set_joint_status",
    ),
)


class _Wake:
    """The queue's wake-up: set when a run is created, in the loop the queue waits in."""

    def __init__(self) -> None:
        self.event: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def arm(self) -> asyncio.Event:
        if self.event is None:
            self.event, self.loop = asyncio.Event(), asyncio.get_running_loop()
        return self.event

    def ring(self) -> None:
        if self.event is None or self.loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.event.set()
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.event.set)


def wake_queue_on_new_runs() -> bool:
    """Make ``langgraph dev``'s queue start a new run at once; False where its runtime is not
    the one running (Aegra, a client) or not the version dcode knows. Installing it twice changes nothing."""
    runtime = sys.modules.get(RUNTIME)
    if runtime is None:
        return False
    runs: Any = runtime.Runs
    if getattr(runs.next, "__dcode_wake__", False):
        return True
    if list(inspect.signature(runs.next).parameters) != ["wait", "limit"]:
        return False  # a runtime other than the one listed: its own pause stays
    wake = _Wake()
    looked = runs.next

    async def next_runs(wait: bool, limit: int = 1) -> AsyncIterator[Any]:
        if wait:
            event = wake.arm()
            with suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), IDLE_POLL_SECONDS)
            event.clear()
        async for item in looked(wait=False, limit=limit):
            yield item

    next_runs.__dcode_wake__ = True  # type: ignore[attr-defined]
    runs.next = staticmethod(next_runs)
    _ring_after(runs, "put", wake)
    _ring_after(runtime.Threads, "set_joint_status", wake)
    return True


def _ring_after(owner: Any, name: str, wake: _Wake) -> None:
    """``owner.name`` (an async static method) wakes the queue once it has returned."""
    done = getattr(owner, name)

    async def then_wake(*args: Any, **kwargs: Any) -> Any:
        result = await done(*args, **kwargs)
        wake.ring()
        return result

    setattr(owner, name, staticmethod(then_wake))
