"""Sections of the system message that are worked out once per thread: the local context, the
memory and the skills index.

``PromptSection`` is what the three share. ``start_turn`` (in the turn's shared before-agent
node, ``sequence``) works the section's value out
(``find``) the first time a thread runs and keeps it in private state under ``key``;
``awrap_model_call`` appends its text (``section``) to every request's system message. Kept,
not recomputed, so the prompt stays byte-stable turn after turn; appended after what is
already there, so the static instructions stay the prefix that provider prompt caches reuse.
The checkpointed messages are never touched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar, Generic, TypeVar, cast

from langchain.agents.middleware import AgentState, ModelRequest, ModelResponse
from langchain_core.messages import ContentBlock, SystemMessage
from langgraph.runtime import Runtime

from dcode.agent.middleware.sequence import InSequence
from dcode.agent.run_context import RunContext, require_run_context

StateT = TypeVar("StateT", bound=AgentState[object])
ValueT = TypeVar("ValueT")


def with_section(request: ModelRequest[RunContext], section: str) -> ModelRequest[RunContext]:
    """``request`` with ``section`` appended to its system message (as is when empty)."""
    if not section:
        return request
    blocks: list[ContentBlock] = (
        list(request.system_message.content_blocks) if request.system_message else []
    )
    blocks.append({"type": "text", "text": f"\n\n{section}" if blocks else section})
    return request.override(system_message=SystemMessage(content_blocks=blocks))


class PromptSection(InSequence[StateT], Generic[StateT, ValueT]):
    """A system-message section found once per thread (see the module's docstring); ``StateT``
    holds its value under ``key``, as a ``ValueT``."""

    key: ClassVar[str]  # the private state field holding the value

    async def find(self, context: RunContext) -> ValueT:
        """The value kept for the thread."""
        raise NotImplementedError

    def section(self, value: ValueT | None) -> str:
        """The text the kept value adds to the system message; empty for none."""
        raise NotImplementedError

    async def start_turn(
        self, state: StateT, runtime: Runtime[RunContext]
    ) -> dict[str, object] | None:
        if self.key in state:
            return None  # found once per thread (a value of None included)
        return {self.key: await self.find(require_run_context(runtime.context))}

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        value = cast(
            "ValueT | None", request.state.get(self.key)
        )  # what ``find`` gave, kept under ``key``
        return await handler(with_section(request, self.section(value)))
