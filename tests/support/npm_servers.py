"""The MCP project's reference servers from npm, installed by ``.ci/run`` into ``.ci/npm`` of
the checkout (``npm install --prefix .ci/npm …``): a test that needs one skips, saying how to
install it, when it is not there or node is missing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

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
