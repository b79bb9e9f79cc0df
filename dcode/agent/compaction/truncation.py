"""Compaction, tier 1's cut: the long arguments of old file-writing calls, shortened.

A file the model wrote twenty steps ago is on disk; the history need not carry its whole text
in every later request. Every string argument longer than ``MAX_ARGUMENT_CHARS`` in a call of a
write tool (kind ``write`` in its spec: ``write_file``, ``edit_file``) older than the keep
window is cut to its first ``HEAD_CHARS`` characters and a marker. Tier 1's middleware sends
the cut history, and tier 2's summary measures the request after it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from dcode.agent.compaction.thresholds import keep_from, reached
from dcode.agent.tools.spec import ToolKind, spec_for
from dcode.context.tokens.counter import TokenCounter
from dcode.settings.compaction_triggers import Triggers

MAX_ARGUMENT_CHARS = 2_000
HEAD_CHARS = 20
MARKER = "...(argument truncated)"


def _writes_files(name: object) -> bool:
    """Whether the call's tool writes files: its text is on disk, so the history can let go."""
    return isinstance(name, str) and spec_for(name).kind is ToolKind.WRITE


def _cut(value: object) -> object:
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
    content = (
        [_cut_block(block) for block in message.content]
        if isinstance(message.content, list)
        else message.content
    )
    return message.model_copy(
        update={"tool_calls": calls, "additional_kwargs": extra, "content": content}
    )


def _cut_block(block: object) -> object:
    if not (
        isinstance(block, dict)
        and block.get("type") == "function_call"
        and _writes_files(block.get("name"))
    ):
        return block
    try:
        args = json.loads(block.get("arguments") or "{}")
    except ValueError:
        return block
    if not isinstance(args, dict):
        return block
    return {**block, "arguments": json.dumps({key: _cut(value) for key, value in args.items()})}


def truncated_history(
    messages: Sequence[BaseMessage],
    window: int,
    triggers: Triggers,
    counter: TokenCounter | None = None,
) -> list[BaseMessage] | None:
    """The messages with old write/edit arguments cut, or None when tier 1's trigger is not
    reached (by the request the messages make) or nothing was long enough to cut."""
    if window <= 0 or not reached(triggers.truncate_at, messages, window, counter=counter):
        return None
    cutoff = keep_from(triggers.keep, messages, window, counter=counter)
    out = [
        truncate_arguments(message) if index < cutoff else message
        for index, message in enumerate(messages)
    ]
    return out if any(new is not old for new, old in zip(out, messages, strict=True)) else None
