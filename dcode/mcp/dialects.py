"""How other clients spell an MCP server, so that their files mean in dcode what they mean there.

Claude Code, Cursor and Claude Desktop write ``{"mcpServers": {NAME: {...}}}`` with
``command`` (stdio) or ``url`` (streamable HTTP, unless ``"type": "sse"``). The others differ:

- Gemini CLI (``.gemini/settings.json``, ``gemini-extension.json``) and Qwen Code, which grew
  from it: ``httpUrl`` is streamable HTTP and a bare ``url`` is the older SSE; values name
  ``$VAR`` as well as ``${VAR}``; ``"mcp": {"excluded": [...], "allowed": [...]}`` turns
  servers off.
- VS Code (``.vscode/mcp.json``): the servers are under ``"servers"``, and a variable is
  ``${env:VAR}``.
- Cline, Roo Code and Windsurf: ``"type": "streamableHttp"`` (however it is spelt),
  ``serverUrl``, and ``"disabled": true``.

Which client a file is comes from its path: the same key means different things in two of
them (``url``), and nothing in the file says whose it is. Standard library only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
BRACED = re.compile(rf"\$\{{(?:env:)?(?P<name>{_NAME})(?::-(?P<default>[^}}]*))?\}}")
"""``${VAR}``, ``${VAR:-default}`` and VS Code's ``${env:VAR}``."""
BRACED_OR_BARE = re.compile(rf"{BRACED.pattern}|\$(?P<bare>{_NAME})")
"""Those, and ``$VAR`` (Gemini CLI)."""


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"
    SSE = "sse"


# "type" as clients write it, lower case, without "-" and "_".
_TYPES = {
    "stdio": Transport.STDIO,
    "http": Transport.HTTP,
    "streamablehttp": Transport.HTTP,
    "sse": Transport.SSE,
}


@dataclass(frozen=True, slots=True)
class Dialect:
    """What a file's client means by the keys that differ."""

    url: Transport = Transport.HTTP
    """What a server with a bare ``url`` (and no ``type``) speaks."""
    variables: re.Pattern[str] = BRACED
    """How the file names an environment variable."""
    switches: bool = False
    """Whether the top-level ``"mcp": {"excluded", "allowed"}`` turns servers off."""


DEFAULT = Dialect()
GEMINI = Dialect(Transport.SSE, BRACED_OR_BARE, switches=True)


def dialect_of(path: Path) -> Dialect:
    """Gemini CLI's (or Qwen Code's) settings or extension file; any other file reads the common way."""
    if path.name in ("gemini-extension.json", "qwen-extension.json"):
        return GEMINI
    if path.name == "settings.json" and path.parent.name in (".gemini", ".qwen"):
        return GEMINI
    return DEFAULT


def server_table(document: object) -> object:
    """The servers' object: ``mcpServers``, or VS Code's ``servers``; None when neither is there."""
    if not isinstance(document, dict):
        return None
    return document.get("mcpServers", document.get("servers"))


def transport_of(entry: dict[str, object], dialect: Dialect) -> Transport:
    """``type`` (or ``transport``, ``transportType``) when written; else what the keys imply."""
    written = entry.get("type") or entry.get("transport") or entry.get("transportType")
    if written:
        kind = _TYPES.get(str(written).lower().replace("-", "").replace("_", ""))
        if kind is None:
            raise ValueError(f"type {written!r} is not one of stdio, http, sse")
        return kind
    if "httpUrl" in entry:
        return Transport.HTTP
    if "command" in entry:
        return Transport.STDIO
    if "serverUrl" in entry:
        return Transport.HTTP
    if "url" in entry:
        return dialect.url
    raise ValueError("needs a command (stdio) or a url (http, sse)")


def url_of(entry: dict[str, object], transport: Transport) -> object:
    """The address, under whichever key the client uses for ``transport``."""
    keys = ("httpUrl", "serverUrl", "url") if transport is Transport.HTTP else ("url", "serverUrl")
    return next((entry[key] for key in keys if key in entry), None)


def disabled(entry: object) -> bool:
    """``"disabled": true`` (Cline, Roo Code, Windsurf) or ``"enabled": false``."""
    return isinstance(entry, dict) and (
        entry.get("disabled") is True or entry.get("enabled") is False
    )


def switched_off(document: object, dialect: Dialect) -> frozenset[str]:
    """The servers a Gemini CLI file turns off: those in ``mcp.excluded``, and, when
    ``mcp.allowed`` is there, every one it does not name."""
    settings = document.get("mcp") if dialect.switches and isinstance(document, dict) else None
    if not isinstance(settings, dict):
        return frozenset()
    table = server_table(document)
    names = set(table) if isinstance(table, dict) else set()
    excluded = settings.get("excluded")
    off = {name for name in names if isinstance(excluded, list) and name in excluded}
    allowed = settings.get("allowed")
    if isinstance(allowed, list):
        off |= {name for name in names if name not in allowed}
    return frozenset(off)


def text_table(value: object, key: str) -> dict[str, str]:
    """``env`` or ``headers``: strings, with a number or a boolean as the string it would be in
    JSON (``8080``, ``true``), the way clients written in JavaScript pass them on."""
    if not isinstance(value, dict) or not all(
        isinstance(v, (str, int, float)) for v in value.values()
    ):
        raise ValueError(f"{key} must be an object of strings")
    return {name: _as_text(v) for name, v in value.items()}


def _as_text(value: str | int | float) -> str:
    match value:
        case str():
            return value
        case float() if value.is_integer():
            return str(int(value))
        case _:
            return json.dumps(value)
