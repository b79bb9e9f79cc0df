"""Translating LangGraph's streams into dcode events, for a live turn and a saved thread alike.

Chunks arrive per model response; tool-call fragments carry an id and name only in their first
fragment, so calls are tracked by (response, index). Complete messages come from ``updates``
and are the source of truth for usage, finished calls and tool results: ``on_message`` turns
one complete message into events, and a saved thread's replay goes through that same method,
so a resumed transcript says exactly what the live one said. Middleware events arrive on the
``custom`` stream as they are.
"""

# Any: LangGraph's astream hands each stream mode's data over untyped

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)

from dcode.agent.attached_files import attached_blocks, attached_in, attachment_lines
from dcode.agent.events import (
    AssistantMessageFinished,
    Event,
    ModelStreamEnded,
    Notice,
    ReasoningDelta,
    ShellCommandRan,
    TextDelta,
    ToolArgsDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnFinished,
    UsageUpdated,
    UserMessage,
)
from dcode.agent.hooks.context_text import without_context
from dcode.agent.markers import CANCELLED_MARKER, HOOK_MARKER
from dcode.agent.shell_note import read_shell_note
from dcode.agent.tools.result import texts_in
from dcode.agent.tools.result_message import read_result
from dcode.agent.tools.summary import summarize_call
from dcode.media.frames import windows_in
from dcode.media.kinds import labels_in
from dcode.models.usage import cached_input_tokens, usage_is_estimated

MODEL_NODE = "model"
STREAM_MODES = ("messages", "updates", "custom")
_MEDIA_BLOCKS = {
    "image": "[image]",
    "image_url": "[image]",
    "input_image": "[image]",
    "video": "[video]",
    "audio": "[audio]",
    "file": "[file]",
}


def message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in {"text", "output_text"}:
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def user_text(message: BaseMessage) -> str:
    """A user message as the transcript shows it: its text, and a mark for each attachment.
    A sampled video window and a file attached with ``@path`` are left out: the transcript
    shows each as one line of its own."""
    if isinstance(message.content, str):
        return without_context(message.content)
    windows = windows_in(message.content)
    attached = attached_blocks(message.additional_kwargs)
    # Images the prompt names by their label (``[image 1]``, pasted in the TUI) need no mark.
    named = labels_in("".join(texts_in(message.content)), "image")
    parts = []
    for index, block in enumerate(message.content):
        if index in attached or any(window.holds(index) for window in windows):
            continue
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            mark = _MEDIA_BLOCKS.get(str(kind), "")
            if mark == _MEDIA_BLOCKS["image"] and named > 0:
                named -= 1
                continue
            parts.append(str(block.get("text", "")) if kind in {"text", "output_text"} else mark)
    return without_context("".join(parts))


def reasoning_text(message: BaseMessage) -> str:
    """The reasoning in a chunk or a complete message (chat's ``reasoning_content``, or the
    Responses API's reasoning blocks)."""
    extra = message.additional_kwargs.get("reasoning_content")
    if isinstance(extra, str) and extra:
        return extra
    if isinstance(message.content, str):
        return ""
    parts: list[str] = []
    for block in message.content:
        if not isinstance(block, dict) or block.get("type") != "reasoning":
            continue
        if isinstance(block.get("reasoning"), str):
            parts.append(block["reasoning"])
        for item in block.get("summary") or []:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
    return "".join(parts)


@dataclass
class TurnTally:
    """A turn's figures: the agent's own, and (``subagent_``) those of the subagents it ran."""

    num_turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    context_tokens: int = 0
    last_text: str = ""
    partial_text: str = ""
    subagent_input_tokens: int = 0
    subagent_output_tokens: int = 0
    subagent_cached_tokens: int = 0

    @property
    def all_input_tokens(self) -> int:
        return self.input_tokens + self.subagent_input_tokens

    @property
    def all_output_tokens(self) -> int:
        return self.output_tokens + self.subagent_output_tokens

    @property
    def all_cached_tokens(self) -> int:
        return self.cached_tokens + self.subagent_cached_tokens

    def finished(
        self,
        session_id: str,
        duration_ms: int,
        *,
        error: str,
        interrupted: bool,
        exceeded: bool = False,
    ) -> TurnFinished:
        """The turn's last event, from these figures: the same for a turn run here and one run
        on a dcode server."""
        return TurnFinished(
            session_id=session_id,
            result=error or self.last_text,
            is_error=bool(error),
            num_turns=self.num_turns,
            input_tokens=self.all_input_tokens,
            output_tokens=self.all_output_tokens,
            duration_ms=duration_ms,
            interrupted=interrupted,
            error=error,
            cached_tokens=self.all_cached_tokens,
            budget_exceeded=exceeded,
        )


class StreamTranslator:
    def __init__(
        self,
        max_input_tokens: int | None,
        session_tokens: tuple[int, int, int] = (0, 0, 0),
        *,
        tally: TurnTally | None = None,
    ) -> None:
        """``session_tokens``: the session's input, output and cached input tokens before this
        turn; ``tally``: where to count the turn (a new one by default)."""
        self.max_input_tokens = max_input_tokens
        self.tally = tally if tally is not None else TurnTally()
        self._chunk_calls: dict[tuple[str, int], str] = {}
        self._session_in, self._session_out, self._session_cached = session_tokens

    def on_stream(self, mode: str, data: Any) -> Iterator[Event]:
        """One item of ``graph.astream(stream_mode=STREAM_MODES)``."""
        match mode:
            case "messages":
                yield from self.on_chunk(*data)
            case "updates":
                yield from self.on_update(data)
            case "custom" if isinstance(data, UsageUpdated) and data.agent:
                yield self._subagent_usage(data)
            case "custom" if isinstance(data, Event):
                yield data

    def _subagent_usage(self, usage: UsageUpdated) -> UsageUpdated:
        """A subagent's usage, counted in this turn; its session figures become the session's."""
        self.tally.subagent_input_tokens += usage.input_tokens
        self.tally.subagent_output_tokens += usage.output_tokens
        self.tally.subagent_cached_tokens += usage.cached_tokens
        return replace(
            usage,
            session_input_tokens=self._session_in + self.tally.all_input_tokens,
            session_output_tokens=self._session_out + self.tally.all_output_tokens,
            session_cached_tokens=self._session_cached + self.tally.all_cached_tokens,
        )

    def on_chunk(self, chunk: object, metadata: Mapping[str, object]) -> Iterator[Event]:
        if not isinstance(chunk, AIMessageChunk) or metadata.get("langgraph_node") != MODEL_NODE:
            return
        message_id = chunk.id or ""
        thought = reasoning_text(chunk)
        if thought:
            yield ReasoningDelta(thought, message_id)
        text = message_text(chunk)
        if text:
            self.tally.partial_text += text
            yield TextDelta(text, message_id)
        for fragment in chunk.tool_call_chunks:
            index = fragment.get("index")
            key = (message_id, index if isinstance(index, int) else -1)
            call_id = self._chunk_calls.get(key)
            if call_id is None and fragment.get("id"):
                call_id = str(fragment["id"])
                self._chunk_calls[key] = call_id
                yield ToolCallStarted(call_id, str(fragment.get("name") or ""))
            if call_id and fragment.get("args"):
                yield ToolArgsDelta(call_id, str(fragment["args"]))
        if getattr(chunk, "chunk_position", None) == "last":
            yield ModelStreamEnded()

    def on_update(self, update: object) -> Iterator[Event]:
        if not isinstance(update, dict):
            return
        for node_update in update.values():
            if not isinstance(node_update, dict):
                continue
            messages = node_update.get("messages") or []
            if isinstance(messages, BaseMessage):
                messages = [messages]
            for message in messages:
                yield from self.on_message(message)

    def on_message(self, message: object) -> Iterator[Event]:
        """What one complete message in the thread says, as events."""
        match message:
            case AIMessage():
                yield from self._on_ai_message(message)
            case ToolMessage():
                yield from self._on_tool_message(message)
            case HumanMessage() if (
                ran := read_shell_note(message_text(message), message.additional_kwargs)
            ) is not None:
                command, exit_code, output = ran
                yield ShellCommandRan(command, output, exit_code)
            case HumanMessage() if isinstance(
                hook := message.additional_kwargs.get(HOOK_MARKER), str
            ):
                said = message_text(message).removeprefix(f"{hook} hook: ")
                yield Notice(f"a {hook} hook asked the agent to go on: {said}")
            case HumanMessage():
                files = attachment_lines(attached_in(message.additional_kwargs))
                yield UserMessage(
                    user_text(message),
                    tuple(window.strip for window in windows_in(message.content)),
                    files,
                )

    def _on_ai_message(self, message: AIMessage) -> Iterator[Event]:
        self.tally.num_turns += 1
        self.tally.partial_text = ""
        text = message_text(message)
        self.tally.last_text = text
        calls = tuple(call["id"] or "" for call in message.tool_calls)
        interrupted = bool(message.additional_kwargs.get(CANCELLED_MARKER))
        yield AssistantMessageFinished(
            message.id or "", text, calls, reasoning_text(message), interrupted
        )
        usage = message.usage_metadata
        if usage:
            cached = cached_input_tokens(usage)
            self.tally.input_tokens += usage.get("input_tokens", 0)
            self.tally.output_tokens += usage.get("output_tokens", 0)
            self.tally.cached_tokens += cached
            self.tally.context_tokens = usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
            yield UsageUpdated(
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
                context_tokens=self.tally.context_tokens,
                max_input_tokens=self.max_input_tokens,
                session_input_tokens=self._session_in + self.tally.all_input_tokens,
                session_output_tokens=self._session_out + self.tally.all_output_tokens,
                cached_tokens=cached,
                session_cached_tokens=self._session_cached + self.tally.all_cached_tokens,
                estimated=usage_is_estimated(message.response_metadata),
            )
        for call in message.tool_calls:
            yield ToolCallRunning(
                call["id"] or "",
                call["name"],
                dict(call["args"]),
                summarize_call(call["name"], call["args"]),
            )

    def _on_tool_message(self, message: ToolMessage) -> Iterator[Event]:
        yield ToolCallFinished(message.tool_call_id, message.name or "", read_result(message))
