"""What a dcode server sends, read back into dcode's own types on the client's side.

A served run's parts come as JSON: messages as LangChain's message dicts (on ``messages`` and
``updates``), dcode's middleware events as ``Event.to_json()`` on ``custom``, and an approval as
an interrupt whose value is an ``ApprovalRequested`` as JSON. The client turns them back into
messages and typed events, so that dcode's own ``StreamTranslator`` makes of them exactly the
events an embedded run gives; and it turns a front end's ``ApprovalDecision`` into the resume
value the server's ``decision_of`` reads.
"""

# Any: the server's JSON, and LangChain's message dicts, are untyped

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict

from dcode.agent import events as event_types
from dcode.agent.decisions import ApprovalDecision
from dcode.agent.events import Event


def message_of(data: object) -> BaseMessage | None:
    """A message as the server serialised it (``{"type": "ai", "content": ...}``), or None."""
    if isinstance(data, BaseMessage):
        return data
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        return None
    try:
        return messages_from_dict([{"type": data["type"], "data": dict(data)}])[0]
    except (ValueError, TypeError, KeyError):
        return None


def update_of(update: object) -> dict[str, Any]:
    """An ``updates`` part with each node's messages made messages again (what the
    translator's ``on_update`` reads); the interrupt key is left out."""
    if not isinstance(update, Mapping):
        return {}
    out: dict[str, Any] = {}
    for node, value in update.items():
        if node == "__interrupt__" or not isinstance(value, Mapping):
            continue
        raw = value.get("messages") or []
        raw = raw if isinstance(raw, list) else [raw]
        messages = [m for m in map(message_of, raw) if m is not None]
        out[node] = {**value, "messages": messages}
    return out


@functools.cache
def _event_classes() -> dict[str, type[Event]]:
    classes: dict[str, type[Event]] = {}
    for value in vars(event_types).values():
        if isinstance(value, type) and issubclass(value, Event) and value is not Event:
            classes[value.type] = value
    return classes


def _convert(kind: Any, value: Any) -> Any:
    """``value`` (JSON) as the field's type ``kind``: an enum, a tuple, a nested dataclass."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return _convert(options[0], value) if len(options) == 1 else value
    if origin is tuple and isinstance(value, list):
        args = typing.get_args(kind)
        return tuple(_convert(args[0] if args else Any, item) for item in value)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
        return _build(kind, value)
    return value


def _build(cls: type, data: Mapping[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {
        f.name: _convert(hints.get(f.name, Any), data[f.name])
        for f in dataclasses.fields(cls)
        if f.name in data
    }
    return cls(**fields)


def event_of(data: object) -> Event | None:
    """A typed event from its JSON (``Event.to_json``), or None for one this client does not
    know (a newer server's) or cannot read."""
    if not isinstance(data, Mapping):
        return None
    cls = _event_classes().get(str(data.get("type")))
    if cls is None:
        return None
    try:
        return typing.cast(Event, _build(cls, data))
    except (TypeError, ValueError, KeyError):
        return None


def resume_value(decision: ApprovalDecision) -> dict[str, object]:
    """The answer to a served approval, as ``dcode.server.approvals.decision_of`` reads it."""
    return {
        "approved": decision.approved,
        "feedback": decision.feedback,
        "remember": decision.remember,
        "whole_server": decision.whole_server,
        "mode": decision.mode.value if decision.mode else None,
        "end_turn": decision.end_turn,
    }
