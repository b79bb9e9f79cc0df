"""Claude Code's tool names and what they mean in dcode: the one table.

Agent definitions name tools this way (``tools: Read, Bash``), and so do permission rules
(``Bash(npm test:*)``, ``Read(./.env)``). Both ask this module, so a name added here is known
to both. Claude's ``Read`` and ``Edit`` rules guard paths rather than one tool: a ``Read`` rule
covers every tool that reads files by path, an ``Edit`` or ``Write`` rule every tool that
writes them (``PATH_READERS``, ``PATH_WRITERS``).
"""

from __future__ import annotations

from typing import Final

from dcode.agent.tools.spec import (
    EDIT_FILE,
    EXECUTE,
    GLOB,
    GREP,
    LS,
    READ_FILE,
    SPECS,
    TASK,
    WEB_FETCH,
    WRITE_FILE,
    WRITE_TODOS,
    ToolKind,
    ToolSpec,
)

CLAUDE_TOOLS: Final[dict[str, str]] = {
    "Read": READ_FILE.name,
    "Write": WRITE_FILE.name,
    "Edit": EDIT_FILE.name,
    "MultiEdit": EDIT_FILE.name,
    "NotebookEdit": EDIT_FILE.name,
    "Bash": EXECUTE.name,
    "Grep": GREP.name,
    "Glob": GLOB.name,
    "LS": LS.name,
    "WebFetch": WEB_FETCH.name,
    "TodoWrite": WRITE_TODOS.name,
    "Task": TASK.name,
    "Agent": TASK.name,
}
"""Claude's name -> dcode's tool name."""

PATH_READERS: Final[tuple[ToolSpec, ...]] = (READ_FILE, GREP, GLOB, LS)
"""The tools a ``Read(path)`` rule guards: each reads files at a path its arguments name."""
PATH_WRITERS: Final[tuple[ToolSpec, ...]] = tuple(
    spec for spec in SPECS.values() if spec.kind is ToolKind.WRITE
)
"""The tools an ``Edit(path)`` or ``Write(path)`` rule guards."""
SHELL: Final = EXECUTE
FETCH: Final = WEB_FETCH
AGENTS: Final = TASK


def dcode_name(name: str) -> str:
    """dcode's name for ``name`` (Claude's or dcode's own); a name neither knows is kept."""
    return CLAUDE_TOOLS.get(name, name)


def read_paths(name: str, args: dict[str, object]) -> list[str]:
    """The paths a reading tool's call names (``file_path``, a search's ``path``), as written."""
    if name not in {spec.name for spec in PATH_READERS}:
        return []
    keys = ("file_path",) if name == READ_FILE.name else ("path",)
    found = [value for key in keys if isinstance(value := args.get(key), str) and value]
    if name == GLOB.name and isinstance(pattern := args.get("pattern"), str) and pattern:
        found.append(pattern)
    if not found and name != READ_FILE.name:
        return ["."]  # a search without a path searches the workspace
    return found


def _names_of(*specs: ToolSpec) -> frozenset[str]:
    """The specs' dcode names and every Claude name that means one of them."""
    mine = {spec.name for spec in specs}
    return frozenset(mine | {claude for claude, dcode in CLAUDE_TOOLS.items() if dcode in mine})


READ_RULE_NAMES: Final = _names_of(*PATH_READERS)
"""Names whose rule with a path guards reads (``Read(./.env)``, ``read_file(./.env)``)."""
EDIT_RULE_NAMES: Final = _names_of(*PATH_WRITERS)
"""Names whose rule with a path guards writes (``Edit(src/**)``, ``Write(...)``)."""
SHELL_RULE_NAMES: Final = _names_of(SHELL)
FETCH_RULE_NAMES: Final = _names_of(FETCH)
AGENT_RULE_NAMES: Final = _names_of(AGENTS)

CLAUDE_SHELL: Final = "Bash"
CLAUDE_FETCH: Final = "WebFetch"
CLAUDE_EDIT: Final = "Edit"
UMBRELLAS: Final[dict[str, frozenset[str]]] = {
    "Read": frozenset(spec.name for spec in PATH_READERS),
    CLAUDE_EDIT: frozenset(spec.name for spec in PATH_WRITERS),
    "Write": frozenset(spec.name for spec in PATH_WRITERS),
}
"""Claude's bare ``Read``, ``Edit`` and ``Write`` mean every tool that reads, or writes, files."""
