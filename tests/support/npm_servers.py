"""The MCP project's reference servers from npm, installed by ``.ci/run`` into ``.ci/npm`` of
the checkout (``npm install --prefix .ci/npm …``): a test that needs one skips, saying how to
install it, when it is not there or node is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_fixtures import HttpServer

NPM_DIR = (
    Path(__file__).resolve().parents[2] / ".ci" / "npm" / "node_modules" / "@modelcontextprotocol"
)
INSTALL = "npm install --prefix .ci/npm @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem"


def npm_entry(package: str, *args: str) -> dict[str, Any]:
    """The config entry that runs ``@modelcontextprotocol/{package}`` over stdio."""
    script = NPM_DIR / package / "dist" / "index.js"
    node = shutil.which("node")
    if node is None or not script.is_file():
        pytest.skip(f"@modelcontextprotocol/{package} is not installed: run {INSTALL}")
    return {"command": node, "args": [str(script), *args]}


class EverythingWebServer(HttpServer):
    """server-everything over streamable HTTP (``transport`` ``http``) or SSE on a port of
    127.0.0.1, killed and started again as the FastMCP one is: a new process knows none of the
    old sessions (it answers a stale one with 400, not the 404 the spec names)."""

    def __init__(self, transport: str, entry: dict[str, Any]) -> None:
        super().__init__(transport)
        self.entry = entry

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        argument = "streamableHttp" if self.transport == "http" else "sse"
        env = {**os.environ, "PORT": str(self.port)}
        return [self.entry["command"], *self.entry["args"], argument], env


@contextmanager
def everything_over(transport: str) -> Iterator[EverythingWebServer]:
    """server-everything over ``transport`` (``http`` or ``sse``); skips where it is missing."""
    server = EverythingWebServer(transport, npm_entry("server-everything"))
    server.start()
    try:
        yield server
    finally:
        server.kill()
