"""The names MCP tools get: ``mcp__{server}__{tool}``, within ``^[a-zA-Z0-9_-]{1,64}$``.

Characters outside the set become ``_``; a name over 64 characters keeps its start and ends in a
short hash of the full name; two tools that would get the same name are told apart by a hash of
their server and tool, in the order the servers and tools are given (deterministic).
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
PROMPT_PREFIX = "/" + PREFIX
"""How an MCP prompt's slash command starts: ``/mcp__server__prompt``."""
MAX_NAME = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def _clean(text: str) -> str:
    return _UNSAFE.sub("_", text) or "_"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def tool_name(server: str, tool: str) -> str:
    name = f"{PREFIX}{_clean(server)}__{_clean(tool)}"
    if len(name) <= MAX_NAME:
        return name
    return f"{name[: MAX_NAME - 9]}_{_hash(server + chr(0) + tool)}"


def assign_names(
    pairs: list[tuple[str, str]], taken: set[str] | frozenset[str] = frozenset()
) -> dict[tuple[str, str], str]:
    """A unique model-facing name for each ``(server, tool)``, none of them in ``taken``."""
    used = set(taken)
    names: dict[tuple[str, str], str] = {}
    for server, tool in pairs:
        name = tool_name(server, tool)
        if name in used:
            name = f"{name[: MAX_NAME - 9]}_{_hash(server + chr(0) + tool)}"
        while name in used:  # a hash collision as well: practically never
            name = f"{name[: MAX_NAME - 9]}_{_hash(name)}"
        used.add(name)
        names[(server, tool)] = name
    return names


def allowed(patterns: tuple[str, ...] | list[str], server: str, tool: str) -> bool:
    """Whether ``[mcp] allow`` names ``tool`` of ``server``: ``server__tool`` or ``server__*``.

    The server is compared whole, as its file names it: ``calc__*`` is every tool of ``calc``
    and nothing of a server named ``calc__evil`` (a model-facing name cannot tell the two apart,
    so the rules are never matched against one). The tool may be named as its server calls it
    or as the model sees it (sanitised)."""
    return any(
        pattern in (f"{server}__*", f"{server}__{tool}", f"{server}__{_clean(tool)}")
        for pattern in patterns
    )


def is_prompt_command(typed: str) -> bool:
    """Whether ``typed`` is an MCP prompt's slash command (``/mcp__server__prompt args``)."""
    return typed.lstrip().startswith(PROMPT_PREFIX)
