"""Real MCP servers for the tests, written with the ``mcp`` SDK's FastMCP.

Run as a script: ``mcp_server.py stdio [--fail-start] [--marker FILE] [--environment FILE]
[--stubborn-child FILE]`` serves over stdio (``--environment``: its environment written to FILE
as JSON first; ``--stubborn-child`` first starts a child of its own that ignores SIGTERM, and
writes its pid to FILE: a server that leaves something behind when it exits);
``mcp_server.py http PORT [--token TOKEN]`` serves streamable HTTP on 127.0.0.1:PORT (at
``/mcp``), refusing requests without ``Authorization: Bearer TOKEN`` when a token is given;
``mcp_server.py sse PORT`` serves the older SSE transport (at ``/sse``).

Tools: ``add`` (text), ``picture`` (a PNG from the corpus), ``broken`` (an ``isError`` result),
``slow`` (sleeps), ``big`` (a long text), ``crash`` (the process exits mid-call), ``pid`` (the server's process id).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from mcp.server.fastmcp import FastMCP, Image

PNG = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "images" / "pillow" / "imagedraw_arc.png"


def build(port: int = 0) -> FastMCP:
    server = FastMCP("dcode-test", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="A small PNG picture.")
    def picture() -> Image:
        return Image(data=PNG.read_bytes(), format="png")

    @server.tool(description="Always fails.")
    def broken() -> str:
        raise ValueError("the broken tool is broken")

    @server.tool(description="Sleeps for a while.")
    def slow(seconds: float) -> str:
        time.sleep(seconds)
        return "done"

    @server.tool(description="Exits the server in the middle of the call.")
    def crash() -> str:
        os._exit(3)

    @server.tool(description="A long text of n characters.")
    def big(n: int) -> str:
        return ("0123456789" * (n // 10 + 1))[:n]

    @server.tool(description="The server's process id.")
    def pid() -> str:
        return str(os.getpid())

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("port", nargs="?", type=int, default=0)
    parser.add_argument("--fail-start", action="store_true")
    parser.add_argument("--marker")
    parser.add_argument("--token")
    parser.add_argument("--environment")
    parser.add_argument("--stubborn-child")
    args = parser.parse_args()
    if args.marker:
        Path(args.marker).write_text(str(os.getpid()))
    if args.environment:
        import json

        Path(args.environment).write_text(json.dumps(dict(os.environ)))
    if args.stubborn_child:
        _start_stubborn_child(Path(args.stubborn_child))
    if args.fail_start:
        print("cannot start: no configuration", file=sys.stderr)
        sys.exit(1)
    server = build(args.port)
    if args.transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app() if args.transport == "http" else server.sse_app()
    if args.token:
        app = _require_token(app, args.token)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


def _start_stubborn_child(pid_file: Path) -> None:
    """A process in the server's own group and session that ignores SIGTERM, never waited for."""
    child = subprocess.Popen(
        ["sh", "-c", 'trap "" TERM; exec sleep 300'],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid_file.write_text(str(child.pid))


def _require_token(app, token: str):
    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


if __name__ == "__main__":
    main()
