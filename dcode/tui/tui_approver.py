"""The TUI's answer to the core's ``Approver`` protocol.

``decide`` posts ``ApprovalNeeded`` with a future and waits; the inline approval widget resolves
the future when the user presses a key. An interrupt cancels the wait, and the widget is then
withdrawn so nothing stays on screen asking a question nobody is waiting for.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from dcode.agent.events import ApprovalRequested
from dcode.tui.messages import ApprovalNeeded, ApprovalWithdrawn

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from dcode.agent.approval import ApprovalDecision


class TuiApprover:
    def __init__(self, target: MessagePump) -> None:
        self._target = target
        self.pending: dict[tuple[tuple[str, ...], str], asyncio.Future[ApprovalDecision]] = {}
        """The questions waiting, by (agent path, call id): parallel subagents ask at once."""

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        key = (request.agent, request.call_id)
        self.pending[key] = future
        self._target.post_message(ApprovalNeeded(request, future))
        try:
            return await future
        except asyncio.CancelledError:
            self._target.post_message(ApprovalWithdrawn(request.call_id, request.agent))
            raise
        finally:
            self.pending.pop(key, None)
