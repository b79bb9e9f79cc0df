"""What an approval policy needs to know about a tool call, answered by the tool's spec.

Write tools change files (a policy may auto-approve those inside the workspace); shell tools
can do anything and are gated separately; read-only tools change nothing outside the
conversation. A tool no spec names is none of these: its kind is ``other``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dcode.agent.tools.spec import ToolKind, spec_for


def tool_kind(name: str) -> ToolKind:
    return spec_for(name).kind


def is_write_tool(name: str) -> bool:
    return tool_kind(name) is ToolKind.WRITE


def is_shell_tool(name: str) -> bool:
    return tool_kind(name) is ToolKind.SHELL


def is_read_only_tool(name: str) -> bool:
    return tool_kind(name) is ToolKind.READ


def target_paths(name: str, args: Mapping[str, Any]) -> list[str]:
    """The paths a write tool would change, as the model wrote them.

    Resolve them with ``Backend.resolve`` / ``is_inside_workspace``; empty for other tools.
    """
    return spec_for(name).target_paths(args)
