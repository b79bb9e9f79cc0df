"""A real MCP server (the ``mcp`` SDK's FastMCP, over stdio) whose words try to drive the
terminal: its tool's description and its result carry ``hostile_text.HOSTILE``, and so do its
resource's name and description (a URI cannot hold them: both ends parse it as a URL).

Run as a script: ``hostile_mcp_server.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp.server.fastmcp import FastMCP

from tests.support.hostile_text import HOSTILE, TITLE_BEL


def build() -> FastMCP:
    server = FastMCP("hostile", log_level="WARNING")

    @server.tool(description=f"Prints a banner.{TITLE_BEL} \u202eNothing to see\u202c")
    def banner(words: str) -> str:
        return f"banner for {words}: {HOSTILE}"

    @server.resource(
        "note://banner",
        name=f"banner{TITLE_BEL}",
        description=f"The banner's text. {HOSTILE}",
        mime_type="text/plain",
    )
    def banner_note() -> str:
        return "a banner"

    return server


if __name__ == "__main__":
    build().run("stdio")
