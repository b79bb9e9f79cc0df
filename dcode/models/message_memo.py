"""What was computed from one message object, remembered while that object lives unchanged.

Every model call walks the whole history several times (the token counts of the compaction
tiers and the calibration, the request's conversion); the messages are the same objects from
one call to the next, so each walk can find a message's result by the object instead of
computing it again from its text.

An entry holds a weak reference to its message, and is dropped when the message is: an id is
only reused after its object is gone, so an entry can never answer for another message. It is
also keyed by the values of the message's fields (``vars(message)``), which it holds: a field
given a new value (``message.content = …``, langgraph giving a message its id) makes the entry
stale. The comparison is a tuple's: by identity first, so the usual case (the same objects)
costs no more than a pointer comparison a field. A change *inside* a field's value (appending to a content list in place) is
not seen; nothing in dcode, langchain or langgraph changes a message of the thread that way
(they copy it: ``model_copy``). Thread-safe enough for its use: all callers run on the event
loop, and a lost race only computes a value twice.
"""

from __future__ import annotations

import weakref
from typing import Generic, TypeVar

T = TypeVar("T")


def _fields(message: object) -> tuple[object, ...]:
    return tuple(vars(message).values())


class MessageMemo(Generic[T]):
    """A value per live message object (see the module doc)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[object], tuple[object, ...], T]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, message: object) -> T | None:
        entry = self._entries.get(id(message))
        if entry is None or entry[0]() is not message or entry[1] != _fields(message):
            return None
        return entry[2]

    def put(self, message: object, value: T) -> T:
        key = id(message)
        entries = self._entries

        def forget(ref: weakref.ref[object]) -> None:
            current = entries.get(key)
            if current is not None and current[0] is ref:
                del entries[key]

        try:
            ref = weakref.ref(message, forget)
        except TypeError:  # not weakly referenceable: not remembered
            return value
        entries[key] = (ref, _fields(message), value)
        return value
