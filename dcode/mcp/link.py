"""One MCP server's connection: a task that opens the session, learns what the server offers
(tools, resources, prompts, instructions) and holds it.

The SDK's transports are anyio task groups, which must be left by the task that entered them,
so each server gets a task of its own (``_hold``) that keeps the session open until ``stop``.
A watchdog fails a server that is not ready within the connect timeout. Calls go through
``call``, which never raises: a timeout, a crash or a broken reply comes back as an
``isError`` result the model can read. A call that times out or is cancelled (Esc) sends the
server ``notifications/cancelled``.

A link that dies while connected (a server that exits, an SSE stream that goes silent, an HTTP
server that restarts or forgets the session) is noticed at once (``wire``): its calls in flight
end, its state says so, and it is made again in the background. A call that finds it down
makes it again once before it reports. A server that keeps dying without answering anything
is left failed (``MAX_RESTARTS``) until the user reconnects it in ``/mcp``.

The server may change its tools, resources and prompts while connected
(``notifications/*/list_changed``): they are listed again, and ``revision`` counts the changes.
It is offered the workspace as its roots, and sent progress tokens whose notifications go to
the call's ``progress``.

stdio servers are registered with ``dcode.processes.trees`` once connected, and what one leaves
running when it stops (a child that ignores SIGTERM, say) is ended then; after a ``kill -9`` of
dcode, the next dcode ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp import ClientSession, McpError
from mcp.types import (
    CONNECTION_CLOSED,
    CallToolResult,
    CancelledNotification,
    CancelledNotificationParams,
    ClientNotification,
    GetPromptResult,
    Implementation,
    InitializeResult,
    ListRootsResult,
    ProgressNotification,
    Prompt,
    PromptListChangedNotification,
    ReadResourceResult,
    Resource,
    ResourceListChangedNotification,
    Root,
    ServerNotification,
    TextContent,
    Tool,
    ToolListChangedNotification,
)
from pydantic import AnyUrl, FileUrl

from dcode import __version__
from dcode.mcp.config import ServerConfig, Transport
from dcode.mcp.failures import clean, describe, needs_login
from dcode.mcp.listing import all_prompts, all_resources, all_tools, needs_task
from dcode.mcp.state import LinkState
from dcode.mcp.transports import SSE_READ_TIMEOUT, open_transport
from dcode.mcp.wire import SESSION_GONE, Relays, relayed
from dcode.processes.trees import TREES
from dcode.sandbox.confine import Sandbox

log = logging.getLogger(__name__)
# The SDK logs a server's broken output with a traceback; without a handler of its own that
# would reach the terminal through logging's last resort (over the TUI, or headless's stderr).
# The call's tool error says what happened; --debug's handler on the root still sees it all.
logging.getLogger("mcp").addHandler(logging.NullHandler())

CLIENT = Implementation(name="dcode", version=__version__)
MAX_RESTARTS = 2
"""Connections made again in a row with no call answered in between, before dcode stops trying."""
STEADY_AFTER = 10.0
"""Seconds after which a connection that dies counts as having worked (it is made again)."""
SESSION_EXPIRED = 32600  # what the SDK answers when the server said 404 to the session
Progress = Callable[[float, float | None, str | None], None]
_tokens = itertools.count(1)


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], isError=True)


def _said(result: CallToolResult) -> str:
    """The words of a result made by ``error_result``."""
    first = result.content[0]
    return first.text if isinstance(first, TextContent) else str(first)


class ServerLink:
    def __init__(
        self,
        config: ServerConfig,
        *,
        connect_timeout: float,
        call_timeout: float,
        log_dir: Path,
        workspace: Path,
        roots: tuple[Path, ...] = (),
        sse_read_timeout: float = SSE_READ_TIMEOUT,
        steady_after: float = STEADY_AFTER,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.config = config
        self.sandbox = sandbox
        """Where the server runs when its config asks for the sandbox."""
        self.name = config.name
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.sse_read_timeout = sse_read_timeout
        self.steady_after = steady_after
        self.log_path = log_dir / f"{config.name}.log"
        # This process's own: another dcode on the same home may run a server of the same name.
        self.pid_path = log_dir / f"{config.name}.{os.getpid()}.pid"
        self.workspace = workspace
        self.roots = roots or (workspace,)
        self.state = LinkState.CONNECTING
        self.error = ""
        self.tools: list[Tool] = []
        self.task_only: list[str] = []
        """Tools the server runs only as tasks, which dcode cannot: not offered."""
        self.resources: list[Resource] = []
        self.prompts: list[Prompt] = []
        self.instructions = ""
        self.generation = 0
        """Counts the connections made."""
        self.revision = 0
        """Counts the changes to what the server offers: a connection, or a list it changed."""
        self.on_change: Callable[[], None] | None = None
        self._session: ClientSession | None = None
        self._relays = Relays(self._lose)
        self._progress: dict[str, Progress | None] = {}
        self._restarts = 0
        self._expired = False
        """The link was lost because the server forgot the session: its calls were not run."""
        self._connected_at = 0.0
        self._answered = False
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._server_pid: int | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._reviving: asyncio.Task[None] | None = None

    @property
    def transport(self) -> Transport:
        return self.config.transport

    @property
    def session(self) -> ClientSession | None:
        """The session of the moment (None while not connected)."""
        return self._session

    def start(self) -> None:
        """Connect in the background; ``ready`` then tells when it is up or has failed."""
        self.state, self.error = LinkState.CONNECTING, ""
        self._ready, self._stop, self._lost = asyncio.Event(), asyncio.Event(), asyncio.Event()
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

    def _lose(self, reason: str) -> None:
        """The connection died under a connected session: say so and end its calls now."""
        if self.state is not LinkState.CONNECTED or self._stop.is_set() or self._lost.is_set():
            return
        self._expired = reason == SESSION_GONE
        self._fail(f"connection lost: {reason}{self._log_tail()}")
        self._relays.cut()
        self._lost.set()

    async def _hold(self) -> None:
        relays = self._relays = Relays(self._lose)
        lost = self._lost
        try:
            async with (
                open_transport(
                    self.config,
                    self._lose,
                    pid_path=self.pid_path,
                    log_path=self.log_path,
                    cwd=self.workspace,
                    timeout=self.connect_timeout,
                    sse_read_timeout=self.sse_read_timeout,
                    sandbox=self.sandbox,
                ) as (read, write),
                relayed(read, write, relays) as (session_read, session_write),
                ClientSession(
                    session_read,
                    session_write,
                    client_info=CLIENT,
                    list_roots_callback=self._list_roots,
                    message_handler=self._on_message,
                ) as session,
            ):
                await self._learn(session, await session.initialize())
                self._register_server()
                self._session, self.state, self.error = session, LinkState.CONNECTED, ""
                self.generation += 1
                self._connected_at, self._answered, self._expired = time.monotonic(), False, False
                self._changed()
                self._ready.set()
                await _first_of(self._stop.wait(), lost.wait())
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the transports raise exception groups
            log.debug("MCP server %s stopped", self.name, exc_info=True)
            if not self._stop.is_set() and not lost.is_set():
                was_up = self.state is LinkState.CONNECTED
                state = LinkState.NEEDS_LOGIN if needs_login(exc) else LinkState.FAILED
                reason = describe(exc)
                self._fail(
                    f"stopped: {reason}{self._log_tail()}"
                    if was_up
                    else f"{reason}{self._log_tail()}",
                    state,
                )
        finally:
            self._session = None
            if self.state is LinkState.CONNECTED and not self._stop.is_set():
                self._fail(f"stopped{self._log_tail()}")
            await self._end_leftovers()
        if lost.is_set() and not self._stop.is_set():
            self._after_loss()

    def _may_revive(self) -> bool:
        """Whether a lost link is made again: yes after a connection that worked (it answered a
        call, or lived ``steady_after`` s), else only ``MAX_RESTARTS`` times in a row."""
        if self.state is LinkState.DISABLED:
            return False
        return (
            self._answered
            or time.monotonic() - self._connected_at >= self.steady_after
            or self._restarts < MAX_RESTARTS
        )

    def _after_loss(self) -> None:
        """Make a lost connection again, unless the server keeps dying without answering."""
        if not self._may_revive():
            return
        if self._answered or time.monotonic() - self._connected_at >= self.steady_after:
            self._restarts = 0
        holder = self._task

        async def again() -> None:
            if holder is not None:
                await asyncio.wait([holder])
            if self.state is LinkState.FAILED and not self._stop.is_set():
                self._restarts += 1
                self.start()
                self._changed()

        self._reviving = asyncio.create_task(again())

    async def _learn(self, session: ClientSession, init: InitializeResult) -> None:
        """What the server offers, as the session starts."""
        self.instructions = (init.instructions or "").strip()
        capabilities = init.capabilities
        tools = await all_tools(session)
        self.tools = [t for t in tools if not needs_task(t)]
        self.task_only = [t.name for t in tools if needs_task(t)]
        self.resources = await all_resources(session) if capabilities.resources else []
        self.prompts = await all_prompts(session) if capabilities.prompts else []

    def _changed(self) -> None:
        self.revision += 1
        if self.on_change is not None:
            self.on_change()

    async def _list_roots(self, context: object) -> ListRootsResult:
        return ListRootsResult(
            roots=[
                Root(uri=FileUrl(path.as_uri()), name=path.name or str(path)) for path in self.roots
            ]
        )

    async def _on_message(self, message: object) -> None:
        """The server's notifications. Lists are fetched again in a task of their own: a
        request made here would wait for a reply this very loop has to read."""
        if not isinstance(message, ServerNotification):
            return
        match message.root:
            case ProgressNotification(params=params):
                callback = self._progress.get(str(params.progressToken))
                if callback is not None:
                    callback(params.progress, params.total, params.message)
            case (
                ToolListChangedNotification()
                | ResourceListChangedNotification()
                | PromptListChangedNotification()
            ):
                self._spawn(self._relist(message.root))

    async def _relist(self, what: object) -> None:
        session = self._session
        if session is None:
            return
        try:
            match what:
                case ToolListChangedNotification():
                    tools = await all_tools(session)
                    self.tools = [t for t in tools if not needs_task(t)]
                    self.task_only = [t.name for t in tools if needs_task(t)]
                case ResourceListChangedNotification():
                    self.resources = await all_resources(session)
                case _:
                    self.prompts = await all_prompts(session)
        except Exception:  # the old list stays; the link's own watch reports a dead server
            log.debug("MCP server %s: listing again failed", self.name, exc_info=True)
            return
        self._changed()

    def _spawn(self, work: Awaitable[object]) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                await work

        task = asyncio.create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _log_tail(self) -> str:
        """`` (server said: LAST LINE)`` from a stdio server's log, or nothing."""
        if self.config.transport is not Transport.STDIO:
            return ""
        try:
            with self.log_path.open("rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 2048))
                lines = [
                    line
                    for line in f.read().decode("utf-8", "replace").splitlines()
                    if line.strip()
                ]
        except OSError:
            return ""
        return f" (stderr: {clean(lines[-1], 120)})" if lines else ""

    async def _usable(self) -> ClientSession | CallToolResult:
        """The session to send a request on, made again once if it was lost; else why not."""
        if self.state is LinkState.DISABLED:
            return error_result(f"the MCP server {self.name} is disabled")
        if self._lost.is_set() and self._task is not None and not self._task.done():
            await asyncio.wait(
                [self._task], timeout=self.connect_timeout
            )  # the lost link's holder decides whether to make it again
        if self._reviving is not None and not self._reviving.done():
            await asyncio.wait([self._reviving])
        if self.state is LinkState.CONNECTING:  # (re)connecting: its watchdog bounds the wait
            await self.ready()
        if (
            self._session is None
            and self.state is LinkState.FAILED
            and self.generation
            and self._restarts < MAX_RESTARTS
        ):
            self._restarts += 1
            await self.stop()
            self.start()
            self._changed()
            await self.ready()
        if self._session is None:
            return error_result(
                f"the MCP server {self.name} is not running: {self.error or self.state.value}"
            )
        return self._session

    async def call(
        self, tool: str, args: dict[str, object], progress: Progress | None = None
    ) -> CallToolResult:
        """The server's answer to one call; every failure as an ``isError`` result. A call the
        server never saw (its session had expired) is sent again once, on a new session."""
        for attempt in (1, 2):
            session = await self._usable()
            if isinstance(session, CallToolResult):
                return session
            result = await self._call(session, tool, args, progress)
            if result is not None:
                return result
            if attempt == 1:
                self._lose(SESSION_GONE)
                await asyncio.sleep(0)
        return error_result(
            f"the MCP server {self.name} keeps forgetting its session: {self.error}"
        )

    async def _call(
        self, session: ClientSession, tool: str, args: dict[str, object], progress: Progress | None
    ) -> CallToolResult | None:
        """One attempt; None when the server answered that it does not know the session."""
        token = f"dcode-{next(_tokens)}"
        self._progress[token] = progress
        try:
            result = await asyncio.wait_for(
                session.call_tool(tool, args, meta={"progressToken": token}), self.call_timeout
            )
            self._answered = True
            return result
        except TimeoutError:
            self._cancel(session, token, f"no answer within {self.call_timeout:g} s")
            return error_result(
                f"{tool} on the MCP server {self.name} did not answer within {self.call_timeout:g} s"
            )
        except asyncio.CancelledError:
            self._cancel(session, token, "cancelled by the user")
            raise
        except McpError as exc:
            if (
                exc.error.code == SESSION_EXPIRED and exc.error.message == "Session terminated"
            ) or (exc.error.code == CONNECTION_CLOSED and self._expired):
                return None
            if exc.error.code == CONNECTION_CLOSED:
                return await self._lost_during(tool, exc)
            return error_result(
                f"the MCP server {self.name} refused the call: {clean(exc.error.message)}"
            )
        except Exception as exc:  # noqa: BLE001 - a broken transport or a reply that does not parse
            if self._session is not session:
                return await self._lost_during(tool, exc)
            return error_result(
                f"the MCP server {self.name} gave an answer dcode cannot read: {describe(exc)}"
            )
        finally:
            self._progress.pop(token, None)
            self._relays.request_ids.pop(token, None)

    async def _lost_during(self, tool: str, exc: BaseException) -> CallToolResult:
        await asyncio.sleep(0)  # let the relays see the transport end
        self._lose(describe(exc))
        again = "it is being reconnected" if self._may_revive() else "it is not restarted again"
        return error_result(
            f"the MCP server {self.name} stopped during {tool}: {self.error}; {again}"
        )

    def _cancel(self, session: ClientSession, token: str, reason: str) -> None:
        """Tell the server to stop working on the call (it may have answered meanwhile)."""
        request_id = self._relays.request_ids.get(token)
        if request_id is None or self._session is not session:
            return
        params = CancelledNotificationParams(requestId=request_id, reason=reason)
        self._spawn(
            session.send_notification(ClientNotification(CancelledNotification(params=params)))
        )

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """The resource's contents; raises ``McpError`` or ``LookupError`` (not connected)."""
        session = await self._usable()
        if isinstance(session, CallToolResult):
            raise LookupError(_said(session))
        result = await asyncio.wait_for(session.read_resource(AnyUrl(uri)), self.call_timeout)
        self._answered = True
        return result

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> GetPromptResult:
        """The prompt's messages; raises ``McpError`` or ``LookupError`` (not connected)."""
        session = await self._usable()
        if isinstance(session, CallToolResult):
            raise LookupError(_said(session))
        result = await asyncio.wait_for(session.get_prompt(name, arguments), self.call_timeout)
        self._answered = True
        return result

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

    async def reconnect(self) -> None:
        """The user's reconnect: a fresh start, whatever happened before."""
        await self.stop()
        self._restarts = 0
        self.start()
        self._changed()

    async def close(self) -> None:
        await self.stop()
        for task in [*self._background, self._reviving]:
            if task is not None:
                task.cancel()


async def _first_of(*waits: Awaitable[object]) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
