"""JSON as dcode reads and writes it: one alias, so a JSON payload is never typed ``Any``.

It imports nothing from dcode, so any layer (``models``, ``mcp``, ``agent``) can use it.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
