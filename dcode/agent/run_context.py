"""What one run of the graph needs from the session around it, passed as LangGraph context.

The compiled graph stays stateless; the runner hands each run its approver, its approval
policy, the backend and a way to put events on the session's stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dcode.agent.approval import ApprovalPolicy, Approver
from dcode.agent.backends.protocol import Backend
from dcode.agent.events import Event


@dataclass(frozen=True, slots=True)
class RunContext:
    approver: Approver
    policy: ApprovalPolicy
    backend: Backend
    emit: Callable[[Event], None]


def current_thread_id(default: str = "") -> str:
    """The thread (session) id of the graph run this is called from, or ``default`` outside one."""
    try:
        from langgraph.config import get_config

        return str(get_config().get("configurable", {}).get("thread_id", "")) or default
    except RuntimeError:
        return default
