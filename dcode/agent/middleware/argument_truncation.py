"""Compaction, tier 1: the long arguments of old file-writing calls, cut in the request.

A file the model wrote twenty steps ago is on disk; the history need not carry its whole text
in every later request. Hook: ``awrap_model_call``. When the request's messages reach tier 1's
trigger (``Triggers.truncate_at``, counted by the session's token counter, by default 70 % of the model's input window: below tier 2's,
so this cheap cut comes first), every long string argument in a
call of a write tool older than the keep window (``Triggers.keep``) is cut to its first
characters and a marker (``dcode.agent.compaction.truncation``).
Only the request changes; the checkpointed history keeps every argument. Other tools' calls,
and short arguments, are never touched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse

from dcode.agent.compaction.thresholds import known_under
from dcode.agent.compaction.truncation import truncated_history
from dcode.agent.middleware.request_messages import request_messages
from dcode.agent.run_context import RunContext
from dcode.context.tokens.counter import TokenCounter
from dcode.settings.compaction_triggers import Triggers


class ArgumentTruncationMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    def __init__(
        self, max_input_tokens: int, triggers: Triggers, counter: TokenCounter | None = None
    ) -> None:
        super().__init__()
        self.window = max_input_tokens
        self.triggers = triggers
        self.counter = counter

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        counter = self.counter
        if (
            counter is not None
            and self.window > 0
            and not known_under(self.triggers.truncate_at, request.messages, self.window, counter)
        ):
            await (
                counter.load()
            )  # the trigger is counted next, on the loop: the encoding is built off it
        messages = truncated_history(request.messages, self.window, self.triggers, counter)
        return await handler(
            request if messages is None else request.override(messages=request_messages(messages))
        )
