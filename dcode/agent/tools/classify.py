"""What an approval policy needs to know about a tool call, without knowing the tools.

Write tools change files (a policy may auto-approve those inside the workspace); shell tools
can do anything and are gated separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from dcode.agent.tools import names

WRITE_TOOLS: Final = frozenset({names.WRITE_FILE, names.EDIT_FILE})
SHELL_TOOLS: Final = frozenset({names.EXECUTE})
READ_ONLY_TOOLS: Final = frozenset({names.LS, names.READ_FILE, names.GLOB, names.GREP})


def is_write_tool(name: str) -> bool:
    return name in WRITE_TOOLS


def is_shell_tool(name: str) -> bool:
    return name in SHELL_TOOLS


def is_read_only_tool(name: str) -> bool:
    return name in READ_ONLY_TOOLS


def target_paths(name: str, args: Mapping[str, Any]) -> list[str]:
    """The paths a write tool would change, as the model wrote them.

    Resolve them with ``Backend.resolve`` / ``is_inside_workspace``; empty for other tools.
    """
    if not is_write_tool(name):
        return []
    path = args.get("file_path")
    return [path] if isinstance(path, str) and path else []
