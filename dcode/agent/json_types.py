"""JSON as dcode reads and writes it, named once so that a JSON payload has a type of its own.

It imports nothing from dcode, so any layer (``models``, ``mcp``, ``agent``) can use it.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
