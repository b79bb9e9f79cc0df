"""How a store decodes what it reads back: LangGraph's serializer, rebuilding only safe types.

LangGraph's default serializer rebuilds any class a stored value names: it imports the module
and calls the class. A checkpoint is only as trusted as whoever could write it, and a store may
be shared (a team's PostgreSQL, an export from another machine). dcode's checkpoints hold
messages, plain data and the graph's own state types, so every store decodes with LangGraph's
allowlist (its safe types: messages, dates, paths…), which the graph extends with its state
schema's types when it compiles (``with_allowlist``). A value naming anything else stays the
plain data it was stored as.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

SAFE_TYPES_ONLY = None
"""``allowed_msgpack_modules`` for LangGraph's built-in list of safe types alone."""


def safe_serde() -> JsonPlusSerializer:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer(allowed_msgpack_modules=SAFE_TYPES_ONLY)
