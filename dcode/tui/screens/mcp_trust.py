"""How the trust question (``screens.trust``) shows a project's ``.mcp.json`` servers that the
user has not approved in this content: each with the command it would run or the URL it would
reach, every variable it would read from the environment, the servers that will not start (a
variable the file may not read) and the user's own servers it replaces.
"""

from __future__ import annotations

from textual.content import Content

from dcode.mcp.config import ProjectEnv, ServerConfig
from dcode.mcp.plan import notes
from dcode.terminal_text import safe_text

_TARGET_CHARS = 200


def server_line(server: ServerConfig, readable: ProjectEnv) -> Content:
    """A server as the project's file names it: drawn safe, since what it runs is the
    repository's to write and a hidden character could make it read as something else."""
    target = safe_text(server.target)
    if len(target) > _TARGET_CHARS:
        target = target[: _TARGET_CHARS - 1] + "…"
    kind = (
        "runs" if server.transport.value == "stdio" else f"connects ({server.transport.value}) to"
    )
    line = Content.assemble(
        ("  " + safe_text(server.name), "bold"), f" {kind} ", (target, "$accent")
    )
    said = notes(server, readable)
    if not said:
        return line
    return Content("\n").join(
        [
            line,
            *(
                Content.styled(f"      {safe_text(note.text)}", "$warning" if note.warning else "")
                for note in said
            ),
        ]
    )
