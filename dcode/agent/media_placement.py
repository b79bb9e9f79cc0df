"""Placement: the media a tool returned go where the model can take them (pure, request only).

A media tool result is a list whose first block is the text *summary*; every block after it is
the *attached content* (reference blocks and the text that belongs with them). When the model
takes that content inside a tool result (``stays``), it stays. Otherwise, for each assistant
message with tool calls, the attached content of all its results is moved, as units and in
tool-call order, into ONE user message placed right after the last result of the batch, each
unit introduced by a line naming its call; the tool result keeps its summary and says where the
content went. That happens only once every call of the batch has its result: while one is still
pending, nothing is injected and the batch's attached content stays out of the request.

Messages and calls are matched by ids (``AIMessage.tool_calls[i]["id"]``,
``ToolMessage.tool_call_id``), never by text. The injected message's id derives from the
assistant message's, and a projected list projects to itself, so a replayed or resumed thread
sends the same bytes. Images the user pasted are not touched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from dcode.agent.tools.spec import spec_for
from dcode.media.modality import has_media

MOVED_NOTE = "The attached content is in the following message."
PENDING_NOTE = (
    "The attached content will be sent in a message after the tool results once every tool "
    "call of this step has its result."
)

Blocks = list[str | dict[str, object]]
"""A message's content blocks, as langchain's messages hold them."""

Stays = Callable[[Blocks], bool]
"""Whether a tool result's attached content may stay in the tool result."""


def injected_id(ai_id: str) -> str:
    """The id of the user message that carries the media of ``ai_id``'s tool calls."""
    return f"{ai_id}:attached"


def split_result(content: object) -> tuple[Blocks, Blocks] | None:
    """(summary, attached content) of a media tool result, or None for any other result."""
    if not isinstance(content, list) or not content:
        return None
    first = content[0]
    head = 1 if isinstance(first, dict) and first.get("type") == "text" else 0
    attached = list(content[head:])
    return (list(content[:head]), attached) if has_media(attached) else None


@dataclass(frozen=True, slots=True)
class _Batch:
    ai: AIMessage
    results: dict[str, int]  # tool_call_id -> index of its ToolMessage
    complete: bool


def place_attachments(messages: list[BaseMessage], stays: Stays) -> list[BaseMessage]:
    """``messages`` with the tool results' attached content placed (see the module doc)."""
    ids = {m.id for m in messages if m.id}
    replaced: dict[int, BaseMessage] = {}
    inserted: dict[int, HumanMessage] = {}
    for batch in _batches(messages):
        parts: Blocks = []
        note = MOVED_NOTE if batch.complete else PENDING_NOTE
        for call in batch.ai.tool_calls:
            index = batch.results.get(str(call.get("id")))
            if index is None:
                continue
            result = messages[index]
            split = split_result(result.content)
            if split is None or stays(split[1]):
                continue
            summary, attached = split
            replaced[index] = result.model_copy(update={"content": [*summary, _text(note)]})
            parts += [
                _text(f"Attached by {spec_for(call['name']).summary(call.get('args') or {})}:"),
                *attached,
            ]
        message_id = injected_id(str(batch.ai.id or next(iter(batch.results), "")))
        if parts and batch.complete and message_id not in ids:
            inserted[max(batch.results.values())] = HumanMessage(content=parts, id=message_id)
    if not replaced:
        return messages
    out: list[BaseMessage] = []
    for index, message in enumerate(messages):
        out.append(replaced.get(index, message))
        if index in inserted:
            out.append(inserted[index])
    return out


def _batches(messages: list[BaseMessage]) -> list[_Batch]:
    """Each assistant message with tool calls, with where its results are."""
    first_result: dict[str, int] = {}
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            first_result.setdefault(message.tool_call_id, index)
    batches: list[_Batch] = []
    for index, message in enumerate(messages):
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        calls = [str(call.get("id")) for call in message.tool_calls]
        results = {c: first_result[c] for c in calls if first_result.get(c, -1) > index}
        if results:
            batches.append(_Batch(message, results, complete=len(results) == len(set(calls))))
    return batches


def _text(text: str) -> dict[str, object]:
    return {"type": "text", "text": text}
