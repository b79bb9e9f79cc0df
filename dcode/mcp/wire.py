"""What lies between a server's transport and dcode's ``ClientSession``: two relays and, for the
HTTP transports, a watch on the HTTP exchanges.

The transports say little when a link dies. A stdio server that exits and an SSE stream that
times out close the read stream; a streamable HTTP server that dies in the middle of a reply,
or that restarted and no longer knows the session (HTTP 404), makes the SDK drop the request
without an answer, so the call would wait its whole timeout. So the messages pass through
relays: the inbound one ends when the transport's stream ends, the outbound one notes the
request id of each tool call (by the progress token dcode gives it, to send
``notifications/cancelled`` later), and the HTTP client's transport reports a connection that
fails. Each of these calls ``lost``; the link then closes the session's inbound stream, which
ends every call in flight at once (the SDK answers them "connection closed").
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCRequest, RequestId

Lost = Callable[[str], None]
SESSION_HEADER = "mcp-session-id"
SESSION_GONE = "the server no longer knows the session (HTTP 404)"
"""Why a link is lost when the server answered 404 to its session: the request was not run."""


@dataclass(slots=True)
class Relays:
    """The streams the session reads and writes, and the request ids seen going out."""

    lost: Lost
    request_ids: dict[str, RequestId] = field(default_factory=dict)
    """A tool call's request id, by the progress token dcode gave the call."""
    inbound: MemoryObjectSendStream[SessionMessage | Exception] | None = None

    def cut(self) -> None:
        """End the session's inbound stream: the calls in flight end with "connection closed"."""
        if self.inbound is not None:
            self.inbound.close()


@contextlib.asynccontextmanager
async def relayed(
    read: MemoryObjectReceiveStream[SessionMessage | Exception],
    write: MemoryObjectSendStream[SessionMessage],
    relays: Relays,
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """The streams for a ``ClientSession`` in place of the transport's ``read`` and ``write``."""
    inbound, session_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    session_write, outbound = anyio.create_memory_object_stream[SessionMessage](0)
    relays.inbound = inbound
    async with anyio.create_task_group() as group:
        group.start_soon(_pump_in, read, inbound, relays)
        group.start_soon(_pump_out, outbound, write, relays)
        try:
            yield session_read, session_write
        finally:
            group.cancel_scope.cancel()
            inbound.close()
            session_write.close()


async def _pump_in(
    read: MemoryObjectReceiveStream[SessionMessage | Exception],
    inbound: MemoryObjectSendStream[SessionMessage | Exception],
    relays: Relays,
) -> None:
    reason = "the server closed the connection"
    try:
        async for message in read:
            if isinstance(message, Exception):
                reason = _reason(message)
            await inbound.send(message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return  # the session ended first: dcode closed it
    relays.lost(reason)
    inbound.close()


async def _pump_out(
    outbound: MemoryObjectReceiveStream[SessionMessage],
    write: MemoryObjectSendStream[SessionMessage],
    relays: Relays,
) -> None:
    async for message in outbound:
        root = message.message.root
        if isinstance(root, JSONRPCRequest) and root.method == "tools/call":
            token = ((root.params or {}).get("_meta") or {}).get("progressToken")
            if isinstance(token, str):
                relays.request_ids[token] = root.id
        try:
            await write.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            relays.lost("the connection to the server is closed")
            relays.cut()
            return


def _reason(exc: BaseException) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "the server sent nothing for too long"
    return str(exc) or type(exc).__name__


class WatchedTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that reports the failures that mean the server is gone or no longer
    knows dcode's session, which the MCP SDK's HTTP clients swallow."""

    def __init__(self, lost: Lost, *, idle_is_lost: bool) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.lost = lost
        self.idle_is_lost = idle_is_lost
        """Whether a stream that stays silent past the read timeout counts (SSE: the SDK ends
        the link then; streamable HTTP reopens its own stream)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.TransportError as exc:
            if request.method != "DELETE":
                self.lost(f"cannot reach the server: {_reason(exc)}")
            raise
        if (
            response.status_code == 404
            and SESSION_HEADER in request.headers
            and request.method != "DELETE"
        ):
            self.lost(SESSION_GONE)
        assert isinstance(response.stream, httpx.AsyncByteStream)  # an async transport's
        response.stream = _WatchedStream(response.stream, self)
        return response

    def failed(self, exc: httpx.TransportError) -> None:
        if isinstance(exc, httpx.ReadTimeout) and not self.idle_is_lost:
            return
        self.lost(f"the connection broke: {_reason(exc)}")

    async def aclose(self) -> None:
        await self.inner.aclose()


class _WatchedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, watch: WatchedTransport) -> None:
        self.inner = inner
        self.watch = watch

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                yield chunk
        except httpx.TransportError as exc:
            self.watch.failed(exc)
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()


def http_client(
    lost: Lost,
    *,
    headers: dict[str, str] | None,
    timeout: float,
    read_timeout: float | None,
    idle_is_lost: bool,
) -> httpx.AsyncClient:
    """An HTTP client for the MCP SDK whose failures reach ``lost``."""
    return httpx.AsyncClient(
        headers=headers,
        timeout=httpx.Timeout(timeout, read=read_timeout),
        transport=WatchedTransport(lost, idle_is_lost=idle_is_lost),
        follow_redirects=True,
    )
