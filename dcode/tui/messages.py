"""Typed messages on the app's bus.

The turn worker, the approver and the engine loader talk to the widgets only through these;
widgets never call the agent directly.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from dcode.agent.events import ApprovalRequested

if TYPE_CHECKING:
    from dcode.agent.approval import ApprovalDecision
    from dcode.agent.engine import Engine


@dataclass
class EngineReady(Message):
    """The engine opened."""

    engine: Engine


@dataclass
class EngineFailed(Message):
    problem: str
    needs_setup: bool
    """True when the problem is a missing key or model the first-run screen can explain."""


@dataclass
class ApprovalNeeded(Message):
    """The core waits on ``future`` until a person decides."""

    request: ApprovalRequested
    future: asyncio.Future[ApprovalDecision]


@dataclass
class ApprovalWithdrawn(Message):
    """The turn ended (interrupt, error) while the approval was still open."""

    call_id: str
    agent: tuple[str, ...] = ()
    """The path of the agent that asked (``ApprovalRequested.agent``)."""
