"""One MCP server's connection: a task that opens the session, lists the tools, and holds it.

The SDK's transports are anyio task groups, which must be left by the task that entered them,
so each server gets a task of its own (``_hold``) that keeps the session open until ``stop``.
A watchdog fails a server that is not ready within the connect timeout. Calls go through
``call``, which never raises: a timeout, a crash or a broken reply comes back as an
``isError`` result the model can read. A stdio server that stopped while it was connected is
restarted once, at its next call.

stdio servers start through ``child.py``, which makes them die with dcode even after a
``kill -9``; their stderr goes to ``$DCODE_HOME/mcp-logs/NAME.log`` (never the screen), whose
last line explains a failed start. A connected server's session is registered with
``dcode.processes.trees``, and what it leaves running when it stops (a child that ignores
SIGTERM, say) is ended then; after a ``kill -9`` of dcode, the next dcode ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, McpError, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.types import CONNECTION_CLOSED, CallToolResult, TextContent, Tool

from dcode.mcp.config import ServerConfig, Transport
from dcode.mcp.failures import clean, describe, needs_login
from dcode.mcp.state import LinkState
from dcode.private_files import ensure_private_dir, open_private
from dcode.processes.trees import TREES

CHILD = Path(__file__).with_name("child.py")
log = logging.getLogger(__name__)
# The SDK logs a server's broken output with a traceback; without a handler of its own that
# would reach the terminal through logging's last resort (over the TUI, or headless's stderr).
# The call's tool error says what happened; --debug's handler on the root still sees it all.
logging.getLogger("mcp").addHandler(logging.NullHandler())


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], isError=True)


class ServerLink:
    def __init__(self, config: ServerConfig, *, connect_timeout: float, call_timeout: float, log_dir: Path, workspace: Path) -> None:
        self.config = config
        self.name = config.name
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.log_path = log_dir / f"{config.name}.log"
        # This process's own: another dcode on the same home may run a server of the same name.
        self.pid_path = log_dir / f"{config.name}.{os.getpid()}.pid"
        self.workspace = workspace
        self.state = LinkState.CONNECTING
        self.error = ""
        self.tools: list[Tool] = []
        self.generation = 0
        """Counts the connections made: a new one means new tools (or the same, again)."""
        self.restarted = False
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._server_pid: int | None = None

    @property
    def transport(self) -> Transport:
        return self.config.transport

    def start(self) -> None:
        """Connect in the background; ``ready`` then tells when it is up or has failed."""
        self.state, self.error = LinkState.CONNECTING, ""
        self._ready, self._stop = asyncio.Event(), asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name=f"mcp-{self.name}")
        self._watch = asyncio.create_task(self._watchdog(self._task), name=f"mcp-{self.name}-watch")

    async def ready(self, timeout: float | None = None) -> bool:
        """Wait until the server is connected or has failed (at most ``timeout`` s); True when connected."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout)
        return self.state is LinkState.CONNECTED

    async def _watchdog(self, task: asyncio.Task[None]) -> None:
        try:
            await asyncio.wait_for(self._ready.wait(), self.connect_timeout)
        except TimeoutError:
            error = f"did not start within {self.connect_timeout:g} s ([mcp] connect_timeout)"
            self._fail(error)
            await self._end(task)
            self._fail(f"{error}{self._log_tail()}")

    async def _end(self, task: asyncio.Task[None], grace: float = 0.5) -> None:
        """Let ``task`` (the holder) finish; a stdio server that does not end when its session
        closes is sent SIGTERM, then SIGKILL; the holder is cancelled as the last resort."""
        for signum in (None, signal.SIGTERM, signal.SIGKILL):
            if signum is not None:
                self._signal(signum)
            done, _ = await asyncio.wait([task], timeout=grace)
            if done:
                return
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, grace)

    def _signal(self, signum: int) -> None:
        if self.config.transport is not Transport.STDIO:
            return
        try:
            pid = int(self.pid_path.read_text())
            os.killpg(pid, signum)  # its own process group: child.py leads it (start_new_session)
        except (OSError, ValueError):
            pass

    def _register_server(self) -> None:
        """The server leads a session of its own (child.py): what it starts is found through it."""
        if self.config.transport is not Transport.STDIO:
            return
        try:
            self._server_pid = int(self.pid_path.read_text())
        except (OSError, ValueError):
            return
        TREES.add(self._server_pid)

    async def _end_leftovers(self) -> None:
        """The server has ended: end what it left running in its session (or below it)."""
        pid, self._server_pid = self._server_pid, None
        if pid is not None:
            await asyncio.to_thread(TREES.end_session, pid)

    def _fail(self, error: str, state: LinkState = LinkState.FAILED) -> None:
        self._session = None
        if self.state is not LinkState.DISABLED:
            self.state = state
        self.error = clean(error)
        self._ready.set()

    async def _hold(self) -> None:
        try:
            async with self._open() as session:
                await session.initialize()
                self._register_server()
                tools = await _all_tools(session)
                self._session, self.tools, self.state = session, tools, LinkState.CONNECTED
                self.generation += 1
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - the transports raise exception groups
            log.debug("MCP server %s stopped", self.name, exc_info=True)
            if self._stop.is_set():
                return
            was_up = self.state is LinkState.CONNECTED
            state = LinkState.NEEDS_LOGIN if needs_login(exc) else LinkState.FAILED
            reason = describe(exc)
            self._fail(f"stopped: {reason}{self._log_tail()}" if was_up else f"{reason}{self._log_tail()}", state)
        finally:
            self._session = None
            if self.state is LinkState.CONNECTED and not self._stop.is_set():
                self._fail(f"stopped{self._log_tail()}")

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[ClientSession]:
        config = self.config
        if config.transport is Transport.STDIO:
            ensure_private_dir(self.log_path.parent)
            params = StdioServerParameters(
                command=sys.executable,
                args=["-S", str(CHILD), str(self.pid_path), config.command, *config.args],
                env={**get_default_environment(), **config.env},
                cwd=config.cwd or str(self.workspace),
            )
            # A process id is signalled only while the server it names runs: the file is made by
            # child.py at the start and removed once the server has ended.
            self.pid_path.unlink(missing_ok=True)
            try:
                with open_private(self.log_path, "a") as errlog:
                    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                        yield session
            finally:
                await self._end_leftovers()
                self.pid_path.unlink(missing_ok=True)
            return
        from langchain_mcp_adapters.sessions import create_session

        connection: dict[str, Any] = {
            "transport": "streamable_http" if config.transport is Transport.HTTP else "sse",
            "url": config.url,
            "headers": dict(config.headers) or None,
            "timeout": self.connect_timeout,
        }
        async with create_session(connection) as session:  # type: ignore[arg-type]
            yield session

    def _log_tail(self) -> str:
        """`` (server said: LAST LINE)`` from a stdio server's log, or nothing."""
        if self.config.transport is not Transport.STDIO:
            return ""
        try:
            with self.log_path.open("rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 2048))
                lines = [line for line in f.read().decode("utf-8", "replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return f" (stderr: {clean(lines[-1], 120)})" if lines else ""

    async def call(self, tool: str, args: dict[str, Any]) -> CallToolResult:
        """The server's answer to one call; every failure as an ``isError`` result."""
        if self.state is LinkState.DISABLED:
            return error_result(f"the MCP server {self.name} is disabled")
        if self.state is LinkState.CONNECTING:  # reconnecting (/mcp): its watchdog bounds the wait
            await self.ready()
        if self._session is None and self.state is LinkState.FAILED and self.generation and not self.restarted:
            self.restarted = True
            await self.stop()
            self.start()
            await self.ready()
        session = self._session
        if session is None:
            return error_result(f"the MCP server {self.name} is not running: {self.error or self.state.value}")
        try:
            return await asyncio.wait_for(session.call_tool(tool, args), self.call_timeout)
        except TimeoutError:
            return error_result(f"{tool} on the MCP server {self.name} did not answer within {self.call_timeout:g} s")
        except McpError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                return await self._crashed(tool, exc)
            return error_result(f"the MCP server {self.name} refused the call: {clean(exc.error.message)}")
        except Exception as exc:  # noqa: BLE001 - a broken transport or a reply that does not parse
            if self._task is None or self._task.done() or self._session is None:
                return await self._crashed(tool, exc)
            return error_result(f"the MCP server {self.name} gave an answer dcode cannot read: {describe(exc)}")

    async def _crashed(self, tool: str, exc: BaseException) -> CallToolResult:
        await asyncio.sleep(0)  # let the holder see the transport end
        if self.state is LinkState.CONNECTED:
            self._fail(f"stopped: {describe(exc)}{self._log_tail()}")
        await self.stop()
        self.state = LinkState.FAILED if self.state is not LinkState.DISABLED else self.state
        again = "" if self.restarted else "; it is restarted at the next call"
        return error_result(f"the MCP server {self.name} stopped during {tool}: {self.error}{again}")

    async def stop(self) -> None:
        """Close the session (a stdio server's process ends with it); harmless when stopped."""
        self._stop.set()
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()
            with contextlib.suppress(BaseException):
                await self._watch
        if self._task is not None and not self._task.done():
            await self._end(self._task)
        self._session = None

    async def disable(self) -> None:
        self.state = LinkState.DISABLED
        await self.stop()


async def _all_tools(session: ClientSession) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(100):
        page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            break
    return tools
