"""Opening a server's transport: stdio (through ``child.py``), streamable HTTP or SSE.

Each yields the transport's read and write streams; the HTTP ones use an HTTP client whose
failures reach ``lost`` (see ``wire``). stdio servers start through ``child.py``, which makes
them die with dcode even after a ``kill -9``; their stderr goes to the link's log file.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from dcode.mcp.config import ServerConfig, Transport
from dcode.mcp.wire import Lost, http_client
from dcode.sandbox.confine import Sandbox, SandboxUnavailable
from dcode.settings.private_files import ensure_private_dir, open_private

CHILD = Path(__file__).with_name("child.py")
SSE_READ_TIMEOUT = 300.0
"""Seconds an SSE stream may stay silent before the SDK ends it (its own default)."""

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]
"""What every MCP transport gives its session: the messages read, and where to write."""


@contextlib.asynccontextmanager
async def stdio(
    config: ServerConfig,
    *,
    pid_path: Path,
    log_path: Path,
    cwd: Path,
    sandbox: Sandbox | None = None,
) -> AsyncIterator[Streams]:
    """``sandbox``: where a server with ``"sandbox": true`` runs (it is refused without one)."""
    ensure_private_dir(log_path.parent)
    command = [config.command, *config.args]
    if config.sandbox:
        if sandbox is None:
            raise SandboxUnavailable("this server asks for the sandbox, which is not set up here")
        command = await sandbox.always_on().wrap_async(command, cwd=cwd / (config.cwd or "."))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-S", str(CHILD), str(pid_path), *command],
        env={**get_default_environment(), **config.env},
        cwd=config.cwd or str(cwd),
    )
    # A process id is signalled only while the server it names runs: the file is made by
    # child.py at the start and removed once the server has ended.
    pid_path.unlink(missing_ok=True)  # noqa: ASYNC240 - one small local file, before the start
    try:
        with open_private(log_path, "a") as errlog:
            async with stdio_client(params, errlog=errlog) as streams:
                yield streams
    finally:
        pid_path.unlink(missing_ok=True)  # noqa: ASYNC240 - one small local file, after the end


@contextlib.asynccontextmanager
async def http(config: ServerConfig, lost: Lost, *, timeout: float) -> AsyncIterator[Streams]:
    """Streamable HTTP. A reply may take as long as the call's own timeout allows, so reads
    have no timeout of their own."""
    client = http_client(
        lost,
        headers=dict(config.headers) or None,
        timeout=timeout,
        read_timeout=None,
        idle_is_lost=False,
    )
    async with client, streamable_http_client(config.url, http_client=client) as (read, write, _):
        yield read, write


@contextlib.asynccontextmanager
async def sse(
    config: ServerConfig, lost: Lost, *, timeout: float, read_timeout: float = SSE_READ_TIMEOUT
) -> AsyncIterator[Streams]:
    """The older SSE transport: its stream ends after ``read_timeout`` s of silence, and the
    link is made again."""

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        return http_client(
            lost,
            headers=headers,
            timeout=timeout.connect if timeout and timeout.connect is not None else 5.0,
            read_timeout=read_timeout,
            idle_is_lost=True,
        )

    async with sse_client(
        config.url,
        dict(config.headers) or None,
        timeout,
        read_timeout,
        httpx_client_factory=factory,
    ) as streams:
        yield streams


def open_transport(
    config: ServerConfig,
    lost: Lost,
    *,
    pid_path: Path,
    log_path: Path,
    cwd: Path,
    timeout: float,
    sse_read_timeout: float,
    sandbox: Sandbox | None = None,
) -> contextlib.AbstractAsyncContextManager[Streams]:
    match config.transport:
        case Transport.STDIO:
            return stdio(config, pid_path=pid_path, log_path=log_path, cwd=cwd, sandbox=sandbox)
        case Transport.HTTP:
            return http(config, lost, timeout=timeout)
        case _:
            return sse(config, lost, timeout=timeout, read_timeout=sse_read_timeout)
