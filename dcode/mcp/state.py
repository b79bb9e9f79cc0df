"""Where a server's connection stands (standard library only: the prompt section, the status
bar and ``/mcp`` read it without loading the MCP SDK)."""

from __future__ import annotations

from enum import StrEnum


class LinkState(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    FAILED = "failed"
    NEEDS_LOGIN = "needs login"
    DISABLED = "disabled"
