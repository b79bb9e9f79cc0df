"""Compaction, tier 1: the long arguments of old file-writing calls, cut in the request.

A file the model wrote twenty steps ago is on disk; the history need not carry its whole text
in every later request. Hook: ``awrap_model_call``. When the request's messages reach tier 1's
trigger (``Triggers.truncate_at``, counted by the session's token counter, by default 70 % of the model's input window: below tier 2's,
so this cheap cut comes first), every string argument longer than ``MAX_ARGUMENT_CHARS`` in a
call of a write tool (kind ``write`` in its spec: ``write_file``, ``edit_file``) older than the
keep window (``Triggers.keep``) is cut to its first ``HEAD_CHARS`` characters and a marker.
Only the request changes; the checkpointed history keeps every argument. Other tools' calls,
and short arguments, are never touched.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage

from dcode.agent.compaction_triggers import Triggers
from dcode.agent.middleware.request_messages import request_messages
from dcode.agent.run_context import RunContext
from dcode.agent.tools.spec import ToolKind, spec_for
from dcode.context.tokens.counter import TokenCounter

MAX_ARGUMENT_CHARS = 2_000
HEAD_CHARS = 20
MARKER = "...(argument truncated)"


def _writes_files(name: object) -> bool:
    """Whether the call's tool writes files: its text is on disk, so the history can let go."""
    return isinstance(name, str) and spec_for(name).kind is ToolKind.WRITE


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_ARGUMENT_CHARS:
        return value[:HEAD_CHARS] + MARKER
    return value


def truncate_arguments(message: BaseMessage) -> BaseMessage:
    """``message`` with the long string arguments of its write/edit calls cut (the same object
    when there is nothing to cut)."""
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return message
    calls = []
    changed = False
    for call in message.tool_calls:
        if _writes_files(call["name"]):
            args = {key: _cut(value) for key, value in call["args"].items()}
            if args != call["args"]:
                call = {**call, "args": args}
                changed = True
        calls.append(call)
    if not changed:
        return message
    # The raw arguments the provider sent go too: Chat Completions keeps them in
    # additional_kwargs (the wire is rebuilt from tool_calls without them), the Responses API
    # in the content's function_call blocks (which the wire is rebuilt from).
    extra = {key: value for key, value in message.additional_kwargs.items() if key != "tool_calls"}
    content = [_cut_block(block) for block in message.content] if isinstance(message.content, list) else message.content
    return message.model_copy(update={"tool_calls": calls, "additional_kwargs": extra, "content": content})


def _cut_block(block: Any) -> Any:
    if not (isinstance(block, dict) and block.get("type") == "function_call" and _writes_files(block.get("name"))):
        return block
    try:
        args = json.loads(block.get("arguments") or "{}")
    except ValueError:
        return block
    if not isinstance(args, dict):
        return block
    return {**block, "arguments": json.dumps({key: _cut(value) for key, value in args.items()})}


def truncated_history(
    messages: Sequence[BaseMessage], window: int, triggers: Triggers, counter: TokenCounter | None = None
) -> list[BaseMessage] | None:
    """The messages with old write/edit arguments cut, or None when tier 1's trigger is not
    reached (by the request the messages make) or nothing was long enough to cut."""
    if window <= 0 or not triggers.truncate_at.reached(messages, window, counter=counter):
        return None
    cutoff = triggers.keep.keep_from(messages, window, counter=counter)
    out = [truncate_arguments(message) if index < cutoff else message for index, message in enumerate(messages)]
    return out if any(new is not old for new, old in zip(out, messages, strict=True)) else None


class ArgumentTruncationMiddleware(AgentMiddleware[AgentState[Any], RunContext]):
    def __init__(self, max_input_tokens: int, triggers: Triggers, counter: TokenCounter | None = None) -> None:
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
        if counter is not None and self.window > 0 and not self.triggers.truncate_at.known_under(request.messages, self.window, counter):
            await counter.load()  # the trigger is counted next, on the loop: the encoding is built off it
        messages = truncated_history(request.messages, self.window, self.triggers, counter)
        return await handler(request if messages is None else request.override(messages=request_messages(messages)))
