"""Eviction ahead of time: a tool result too large for the conversation never enters it whole.

Hook: ``awrap_tool_call``, so it acts on the result before it is added to the history: the
checkpoint, every later request and a resumed session all hold the short form. A result whose
text is over ``EVICT_CHARS`` is written to ``$DCODE_HOME/large_tool_results/{session}/{call id}``
and replaced by a note (the call, the file, how to read it by offset and limit) and the
head/tail preview (``dcode.agent.large_results``). The note carries the file in its
``additional_kwargs`` (``result_message.saved_elsewhere``), never sent to the model, so the
finished call's ``ToolResult.saved_to`` says where the full output is. If the file cannot be written, the result stays as it was.

Exempt, as in the reference: the tools that bound their own output or whose result is the file
itself (ls, glob, grep, read_file, edit_file, write_file). Multimodal results are left to the
media projection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from dcode.agent.large_results import result_note, result_path, save_text
from dcode.agent.run_context import RunContext, current_thread_id
from dcode.agent.tools.result_message import saved_elsewhere
from dcode.agent.tools.spec import EDIT_FILE, GLOB, GREP, LS, READ_FILE, WRITE_FILE

EVICT_CHARS: Final = 80_000
EXEMPT: Final = frozenset(spec.name for spec in (LS, GLOB, GREP, READ_FILE, EDIT_FILE, WRITE_FILE))


def over_limit(message: ToolMessage, tool: str) -> bool:
    """Whether a result of ``tool`` is one to evict: text over ``EVICT_CHARS``, not exempt."""
    return (
        isinstance(message.content, str)
        and len(message.content) > EVICT_CHARS
        and tool not in EXEMPT
    )


def evicted(message: ToolMessage, tool: str, root: Path, session_id: str) -> ToolMessage:
    """``message`` (a result of ``tool``) with its text saved under ``root`` and replaced by the
    note, when it is over ``EVICT_CHARS`` and its file could be written; else ``message`` itself.
    Writes a file: off the event loop."""
    text = message.content
    if not over_limit(message, tool) or not isinstance(text, str):
        return message
    target = result_path(root, session_id, message.tool_call_id)
    if not save_text(target, text):
        return message
    note = result_note(text, message.tool_call_id, target, "for the conversation")
    return saved_elsewhere(message, note, str(target))


class ResultEvictionMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    def __init__(self, results_dir: Path) -> None:
        super().__init__()
        self.results_dir = results_dir

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[object]]],
    ) -> ToolMessage | Command[object]:
        result = await handler(request)
        if not isinstance(result, ToolMessage):
            return result  # a Command (compact_conversation's) updates state, it is no output
        where = self._where(result, request)
        return await asyncio.to_thread(evicted, *where) if over_limit(result, where[1]) else result

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[object]],
    ) -> ToolMessage | Command[object]:
        result = handler(request)
        return evicted(*self._where(result, request)) if isinstance(result, ToolMessage) else result

    def _where(
        self, result: ToolMessage, request: ToolCallRequest
    ) -> tuple[ToolMessage, str, Path, str]:
        """``evicted``'s arguments: the result, its tool, and where its session's files go."""
        return (
            result,
            result.name or request.tool_call["name"],
            self.results_dir,
            current_thread_id("session"),
        )
