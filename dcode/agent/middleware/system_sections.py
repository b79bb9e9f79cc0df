"""Sections of the system message that are worked out once per thread: the local context, the
memory and the skills index.

``PromptSection`` is what the three share. ``abefore_agent`` works the section's value out
(``find``) the first time a thread runs and keeps it in private state under ``key``;
``awrap_model_call`` appends its text (``section``) to every request's system message. Kept,
not recomputed, so the prompt stays byte-stable turn after turn; appended after what is
already there, so the static instructions stay the prefix that provider prompt caches reuse.
The checkpointed messages are never touched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage


def with_section(request: ModelRequest, section: str) -> ModelRequest:
    """``request`` with ``section`` appended to its system message (as is when empty)."""
    if not section:
        return request
    blocks: list[Any] = list(request.system_message.content_blocks) if request.system_message else []
    blocks.append({"type": "text", "text": f"\n\n{section}" if blocks else section})
    return request.override(system_message=SystemMessage(content=blocks))


class PromptSection(AgentMiddleware):
    """A system-message section found once per thread (see the module's docstring)."""

    key: ClassVar[str]  # the private state field holding the value

    async def find(self, runtime: Any) -> Any:
        """The value kept for the thread (the run's context is ``runtime.context``)."""
        raise NotImplementedError

    def section(self, value: Any) -> str:
        """The text the kept value adds to the system message; empty for none."""
        raise NotImplementedError

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if self.key in state:
            return None  # found once per thread (a value of None included)
        return {self.key: await self.find(runtime)}

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(with_section(request, self.section(request.state.get(self.key))))
