"""MCP servers for the tests: config entries pointing at ``tests/support/mcp_server.py``, and a
streamable HTTP server on loopback run for the length of a test."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SERVER = Path(__file__).with_name("mcp_server.py")


def stdio_entry(*flags: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER), "stdio", *flags]}


def write_config(path: Path, servers: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """A FastMCP server over streamable HTTP (or SSE) on a port of 127.0.0.1 that a test can
    kill and start again (a new process: it knows none of the old sessions)."""

    def __init__(self, transport: str = "http", token: str | None = None) -> None:
        self.transport = transport
        self.token = token
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"http://127.0.0.1:{self.port}/{'mcp' if transport == 'http' else 'sse'}"

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        """What starts the server, and its environment (``None``: this process's)."""
        command = [
            sys.executable,
            str(SERVER),
            self.transport,
            str(self.port),
            *(["--token", self.token] if self.token else []),
        ]
        return command, None

    def start(self) -> None:
        command, env = self.command()
        process = self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(
                    f"the MCP test server exited: {process.stderr.read().decode() if process.stderr else ''}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


@contextmanager
def http_server(token: str | None = None, transport: str = "http") -> Iterator[str]:
    """A FastMCP server over streamable HTTP (or SSE) on 127.0.0.1; yields its URL."""
    with restartable_server(transport, token) as server:
        yield server.url


@contextmanager
def restartable_server(transport: str = "http", token: str | None = None) -> Iterator[HttpServer]:
    server = HttpServer(transport, token)
    server.start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.terminate()
            server.process.wait(5)


# A server that speaks just enough JSON-RPC to start, then answers every call with garbage.
GARBAGE = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "garbage", "version": "0"}}
    elif message["method"] == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Echoes.", "inputSchema": {"type": "object", "properties": {}}}]}
    else:
        print("this is not JSON-RPC {{{", flush=True)
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"content": "not a list"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def garbage_entry() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-c", GARBAGE]}


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


# A server written against the wire, for results FastMCP will not send as they are: a structured
# result with no content, blobs of text, JSON and bytes, a resource link, and a tool it runs
# only as a task.
RAW = r"""
import base64, json, sys
def b64(data):
    return base64.b64encode(data).decode()
TOOLS = [
    {"name": "structured", "description": "Weather, as structured content only.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "blobs", "description": "Blobs and a link.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "background", "description": "Runs only as a task.", "inputSchema": {"type": "object", "properties": {}}, "execution": {"taskSupport": "required"}},
    {"name": "either", "description": "Runs as a task or not.", "inputSchema": {"type": "object", "properties": {}}, "execution": {"taskSupport": "optional"}},
]
RESULTS = {
    "structured": {"content": [], "structuredContent": {"temperature": 21.5, "conditions": "fog"}},
    "blobs": {"content": [
        {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "blob": b64("plain notes\nline two".encode())}},
        {"type": "resource", "resource": {"uri": "file:///data.json", "mimeType": "application/json", "blob": b64(b'{"ok": true}')}},
        {"type": "resource", "resource": {"uri": "file:///raw.bin", "mimeType": "application/octet-stream", "blob": b64(bytes(range(16)))}},
        {"type": "resource_link", "uri": "file:///report.pdf", "name": "report", "description": "The quarterly report.", "mimeType": "application/pdf"},
    ]},
    "either": {"content": [{"type": "text", "text": "ran"}]},
}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message["method"]
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    else:
        result = RESULTS[message["params"]["name"]]
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def raw_entry() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-c", RAW]}
