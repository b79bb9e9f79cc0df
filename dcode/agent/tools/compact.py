"""``compact_conversation``: the model asks for the older part of the conversation to be
summarized, when the context is filling up and a natural break has come.

It shares the compaction of the window's own trigger (``Compactor``): everything before the
user's latest message is archived and summarized, and later requests carry the summary. It is
only eligible once the provider has reported a request of at least ``ELIGIBLE`` of the
trigger; before that, or with nothing to compact, it says so and changes nothing. Its result
gives the facts ``/offload`` shows: the messages summarized, the tokens before → after, what
stays verbatim and the archive; a compaction that would not shrink the request is refused, and
the result says why.
"""

# Any: LangGraph injects the agent's state untyped (pydantic cannot take its TypedDict)

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain.tools import InjectedState, tool
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId
from langgraph.runtime import get_runtime
from langgraph.types import Command

from dcode.agent.compaction.record import read_compaction, reported_tokens
from dcode.agent.compaction.summary import CompactionFailed, Compactor
from dcode.agent.compaction_words import compacted_words, refused_words
from dcode.agent.events import CompactionRefused
from dcode.agent.run_context import RunContext, current_thread_id, require_run_context
from dcode.agent.tools.result import ToolResult
from dcode.agent.tools.result_message import message_fields
from dcode.agent.tools.spec import COMPACT_CONVERSATION

ELIGIBLE = 0.5  # of the compaction trigger, by the provider's reported usage

NOTHING_YET = "Nothing to compact yet: the conversation is within the token budget."

DESCRIPTION = """Compact the conversation: summarize and archive everything before the user's \
latest message, to make room in the context window. Use it when the context is filling up and \
the work reaches a natural break (a task done, before starting another). The summary keeps the \
intent, what was done, the files and commands, and the next steps; the full history stays in an \
archive file you can read. It does nothing while the conversation is still small."""


def eligible(compactor: Compactor, messages: Sequence[BaseMessage]) -> bool:
    """Half way to tier 2's trigger: by the provider's reported usage for a trigger in tokens
    (none reported: not yet), by the count for one in messages."""
    trigger = compactor.trigger_tokens
    if trigger is None:
        return len(messages) >= max(
            1, int(compactor.triggers.summarize_at.limit(compactor.window) * ELIGIBLE)
        )
    return reported_tokens(messages) >= max(1, int(trigger * ELIGIBLE))


def make_compact_tool(compactor: Compactor) -> BaseTool:
    @tool(COMPACT_CONVERSATION.name, description=DESCRIPTION)
    async def compact_conversation(
        state: Annotated[Any, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> Command | str:
        # Typed here, not in the signature: langchain builds the tool's schema with pydantic,
        # which cannot take the state's TypedDict (nor a parametrized ToolRuntime).
        thread: Mapping[str, Any] = state
        messages: list[BaseMessage] = list(thread["messages"])
        if not eligible(compactor, messages):
            return NOTHING_YET
        context = require_run_context(get_runtime(RunContext).context)
        try:
            done = await compactor.compact(
                messages,
                read_compaction(thread),
                session_id=current_thread_id("session"),
                emit=context.emit,
                force=True,
                budget=context.budget,
            )
        except CompactionFailed:
            return "Compaction failed: the conversation is unchanged."
        if isinstance(done, CompactionRefused):
            return f"Compaction refused: {refused_words(done)}."
        if done is None:
            return NOTHING_YET
        reply = f"Conversation compacted: {compacted_words(done.finished)}."
        return Command(
            update={
                "compaction": done.event,
                "messages": [
                    ToolMessage(**message_fields(ToolResult(reply)), tool_call_id=tool_call_id)
                ],
            }
        )

    return compact_conversation
