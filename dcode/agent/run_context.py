"""What one run of the graph needs from the session around it, passed as LangGraph context.

The compiled graph stays stateless; the runner hands each run its approver, its approval
policy, the backend and a way to put events on the session's stream. That way is normally
``emit_to_stream``: the event goes out on the run's ``custom`` stream, in order with the model's
chunks, so the runner reads one stream and needs no queue or task of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dcode.agent.approval import Approver, Policy
from dcode.agent.backends.protocol import Backend
from dcode.agent.budget import AgentBudget
from dcode.agent.events import Event
from dcode.agent.rewind.changes import ChangeLog

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
    budget: AgentBudget | None = None
    """The session's spend and limits, charged by every model request of the run (None: not
    counted, as outside a session's turn)."""


def current_thread_id(default: str = "") -> str:
    """The thread (session) id of the graph run this is called from, or ``default`` outside one."""
    try:
        from langgraph.config import get_config

        return str(get_config().get("configurable", {}).get("thread_id", "")) or default
    except RuntimeError:
        return default
