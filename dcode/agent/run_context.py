"""What one run of the graph needs from the session around it, passed as LangGraph context.

The compiled graph stays stateless; the runner hands each run its approver, its approval
policy, the backend and a way to put events on the session's stream. That way is normally
``emit_to_stream``: the event goes out on the run's ``custom`` stream, in order with the model's
chunks, so the runner reads one stream and needs no queue or task of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dcode.agent.approval import Approver, Policy
from dcode.agent.backends.protocol import Backend
from dcode.agent.budget import AgentBudget
from dcode.agent.events import Event
from dcode.agent.rewind.changes import ChangeLog

if TYPE_CHECKING:
    from dcode.agent.hooks.runner import Hooks

RECURSION_LIMIT = 10_000
"""Graph steps a run may take (a session's turn or a subagent's job): a loop of tool calls ends
by the turn limits and Esc long before this."""


def emit_to_stream(event: Event) -> None:
    """Put ``event`` on the running graph's ``custom`` stream (dropped outside a run)."""
    from langgraph.config import get_stream_writer

    try:
        writer = get_stream_writer()
    except (RuntimeError, KeyError):  # not inside a graph run: nobody is listening
        return
    writer(event)


@dataclass(frozen=True, slots=True)
class RunContext:
    approver: Approver
    policy: Policy
    backend: Backend
    emit: Callable[[Event], None] = emit_to_stream
    agent: tuple[str, ...] = ()
    """The path of the agent the run is for: ``()`` for the session's own, ``("task:2",)`` for
    a subagent (``Event.agent``)."""
    changes: ChangeLog | None = None
    """Where the files the run's tools write are recorded for ``/rewind`` (None: nowhere)."""
    hooks: Hooks | None = None
    """The session's hooks (``dcode.agent.hooks``); None: no hook runs."""
    budget: AgentBudget | None = None
    """The session's spend and limits, charged by every model request of the run (None: not
    counted, as outside a session's turn)."""
    record: TurnRecord | None = None
    """Where a run that no runner wraps (a served run) lists its session as a prompt comes in
    (None: its runner does, ``SessionRunner._begin``)."""


class TurnRecord(Protocol):
    """The session's record in the session store, for a run that no runner wraps: the graph
    itself notes each prompt it accepts (``TurnHooksMiddleware``), as the runner does around an
    embedded turn, so that the session is listed titled by its first prompt."""

    async def prompted(self, prompt: str, message_count: int) -> None: ...


@runtime_checkable
class LiveContext(Protocol):
    """A run context given as data (a served run's JSON context, ``dcode.server``) that builds
    the live ``RunContext`` from it, once per run."""

    @property
    def live(self) -> RunContext: ...


class MissingRunContext(TypeError):
    """dcode's graph was run without ``context=RunContext(...)``."""


def require_run_context(context: object) -> RunContext:
    """The run's ``RunContext``: the context itself, or the one a served run's context built."""
    if isinstance(context, RunContext):
        return context
    if isinstance(context, LiveContext) and isinstance(context.live, RunContext):
        return context.live
    raise MissingRunContext(
        f"dcode's agent graph runs with context=RunContext(...) (SessionRunner passes one); got {type(context).__name__}"
    )


def current_thread_id(default: str = "") -> str:
    """The thread (session) id of the graph run this is called from, or ``default`` outside one."""
    try:
        from langgraph.config import get_config

        return str(get_config().get("configurable", {}).get("thread_id", "")) or default
    except RuntimeError:
        return default
