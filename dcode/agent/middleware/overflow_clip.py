"""Compaction, tier 3: when the model says the request overflows its window, clip and retry once.

The usual cause is the step just taken: a batch of tool results too large for what is left of
the window. Hook: ``awrap_model_call``. On a context-overflow error, if the request ends in
tool results whose estimated tokens reach ``CLIP_AT`` of the window, each of them is clipped
for a second, last try: a ``read_file`` result to its head and a note on reading the rest by
offset and limit; any other result is written to ``$DCODE_HOME/large_tool_results/{session}/`` and
replaced by its path and a preview (``dcode.agent.large_results``). Only the request changes; the
session keeps the full results. A second overflow, or one with nothing to clip, is the
model's error as it came.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage

from dcode.agent.events import Notice
from dcode.agent.large_results import result_note, result_path, save_text
from dcode.agent.markers import SAVED_TO_MARKER
from dcode.agent.middleware.request_messages import request_messages
from dcode.agent.run_context import RunContext, current_thread_id, require_run_context
from dcode.agent.tools.spec import READ_FILE
from dcode.context.tokens.counter import TokenCounter
from dcode.models.errors import is_context_overflow

CLIP_AT = 0.10  # of the model's input window, for the trailing tool results together
READ_HEAD_CHARS = 4_000
MIN_CLIP_CHARS = 2_000  # a result this short is left as it is


def _calls_by_id(messages: Sequence[BaseMessage]) -> dict[str, ToolCall]:
    return {
        call_id: call
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if (call_id := call.get("id"))
    }


def _clip_read(text: str, call: ToolCall) -> str:
    path = call.get("args", {}).get("file_path", "the file")
    return (
        f"{text[:READ_HEAD_CHARS]}\n\n[The output was cut to fit the context window. The whole file is at {path}: "
        "read it with read_file's offset and limit to get the parts you need.]"
    )


def _offload(text: str, message: ToolMessage, directory: Path) -> str | None:
    target = result_path(directory, current_thread_id("session"), message.tool_call_id)
    if not save_text(target, text):
        return None
    return result_note(text, message.tool_call_id, target, "for the context window")


def clip_trailing_results(
    messages: Sequence[BaseMessage], threshold: int, directory: Path, counter: TokenCounter
) -> list[BaseMessage] | None:
    """The messages with their trailing batch of tool results clipped, or None when they do not
    end in tool results that reach ``threshold`` estimated tokens, or none could be clipped."""
    start = len(messages)
    while start > 0 and isinstance(messages[start - 1], ToolMessage):
        start -= 1
    batch = list(messages[start:])
    if not batch or counter.estimate_messages(batch) < threshold:
        return None
    calls = _calls_by_id(messages[:start])
    out = list(messages)
    for index in range(start, len(messages)):
        message = messages[index]
        assert isinstance(message, ToolMessage)
        if (
            not isinstance(message.content, str)
            or len(message.content) <= MIN_CLIP_CHARS
            or message.additional_kwargs.get(SAVED_TO_MARKER)
        ):
            continue  # multimodal results are left to the image projection; short or already saved ones whole
        call = calls.get(message.tool_call_id)
        if call is not None and call["name"] == READ_FILE.name:
            clipped: str | None = _clip_read(message.content, call)
        else:
            clipped = _offload(message.content, message, directory)
        if clipped is not None:
            out[index] = message.model_copy(update={"content": clipped})
    return out if any(new is not old for new, old in zip(out, messages, strict=True)) else None


class OverflowClipMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    def __init__(self, max_input_tokens: int, results_dir: Path, counter: TokenCounter) -> None:
        super().__init__()
        self.threshold = max(1, int(max_input_tokens * CLIP_AT))
        self.results_dir = results_dir
        self.counter = counter

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        try:
            return await handler(request)
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            await self.counter.load()  # the clip counts on the loop: the encoding is built off it
            clipped = clip_trailing_results(
                request.messages, self.threshold, self.results_dir, self.counter
            )
            if clipped is None:
                raise
            require_run_context(request.runtime.context).emit(
                Notice(
                    "the last tool results overflowed the context window: sent clipped, retrying once"
                )
            )
            return await handler(request.override(messages=request_messages(clipped)))
