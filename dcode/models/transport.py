"""How long dcode waits for a model server, and how the answer's bytes reach the OpenAI client.

Four limits, each a setting (``dcode/settings/config.py``), so that a hung server costs minutes at worst:

- ``connect_timeout``: opening the connection (httpx's own connect timeout).
- ``request_timeout``: from sending a request to the first byte of its answer, per try. httpx's
  read timeout cannot express it, since it covers every read and so cannot tell a server that
  never started answering from one that paused mid-answer; ``ModelHttpClient.send`` holds this
  deadline instead, and the OpenAI client retries when it fires, as for any timeout.
- ``stall_timeout``: silence once the answer has started: no event for that long (SSE
  keep-alive comments do not count). ``AnswerStream`` holds it, with ``asyncio.timeout``;
  langchain-openai's own ``stream_chunk_timeout`` is left off (``dcode/models/factory.py``): it
  waits with ``asyncio.wait_for``, which on Python 3.11 loses a cancellation that lands as a
  chunk arrives, so an interrupted turn could stream on to the answer's end.
- ``retry_budget``: all the time spent on one request before its answer starts, tries and the
  back-off between them included. The OpenAI client only counts tries, so
  ``BudgetedAsyncOpenAI.request`` holds a deadline around its retry loop (that ``request`` holds
  the loop is listed in ``dcode/models/langchain_internals.py``).

Whether to retry is the OpenAI client's rule (timeouts, dropped connections, 408, 409, 429 and
5xx; ``x-should-retry: true`` or ``false`` decides first), with two more: a server's error
that a gateway already retried upstream is not tried again (LiteLLM's proxy retries a failing
model itself and marks every answer with its ``x-litellm-`` headers, so dcode's tries would
multiply its own), and a ``Retry-After`` that ends past the retry budget is not waited for:
the answer's error is reported at once instead of after a sleep that cannot succeed.

Every timeout raises an exception that carries its limit, so the error line can say which one
fired and how to change it (``dcode/models/errors.py``). The answer's body is read ahead by a
task and passed through ``ArgsDeltaMerger``, and a connection lost mid-answer is marked as such.
"""

# Any: the OpenAI SDK's client and httpx's transport, overridden here, take untyped options and **kwargs; the answer's queue carries bytes, errors and an end marker

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import ssl
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx2
import openai

from dcode.models.sse_merge import ArgsDeltaMerger

if TYPE_CHECKING:
    from dcode.settings.config import Settings


@dataclass(frozen=True, slots=True)
class Limits:
    connect: float
    first_byte: float
    stall: float
    retry_budget: float

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            settings.connect_timeout,
            settings.request_timeout,
            settings.stall_timeout,
            settings.retry_budget,
        )

    @property
    def httpx_timeout(self) -> httpx2.Timeout:
        """httpx's part: connecting (and waiting for a pooled connection); reads and writes are
        bounded by the first-byte deadline and the stall timeout instead."""
        return httpx2.Timeout(None, connect=self.connect, pool=self.connect)


class ConnectTimedOut(httpx2.ConnectTimeout):
    """No connection within ``connect_timeout``; the OpenAI client retries it."""

    def __init__(self, seconds: float, request: httpx2.Request) -> None:
        super().__init__(f"no connection within {seconds:g} s", request=request)
        self.seconds = seconds


class FirstByteTimeout(httpx2.ReadTimeout):
    """The server accepted the request but sent nothing within ``request_timeout``; retried."""

    def __init__(self, seconds: float, request: httpx2.Request) -> None:
        super().__init__(f"no answer within {seconds:g} s", request=request)
        self.seconds = seconds


class ClosedMidAnswer(httpx2.ReadError):
    """The connection failed after the answer had started (a transport error while reading it)."""


class StreamStalled(httpx2.ReadTimeout):
    """The answer had started, then no event came for ``stall_timeout`` seconds."""

    def __init__(self, seconds: float, request: httpx2.Request) -> None:
        super().__init__(f"nothing for {seconds:g} s mid-answer", request=request)
        self.seconds = seconds


class RetryBudgetExceeded(Exception):
    """One request took longer than ``retry_budget`` before its answer started, tries included."""

    def __init__(self, seconds: float, tries: int, last: str) -> None:
        super().__init__(
            f"no answer within the retry budget of {seconds:g} s ({tries} tries; the last: {last})"
        )
        self.seconds = seconds
        self.tries = tries
        self.last = last


@dataclass(slots=True)
class _Tries:
    """What the tries of one request came to, for the retry budget's error line."""

    count: int = 0
    last: str = "no answer yet"
    deadline: float | None = None
    """When the retry budget runs out, on ``time.monotonic``'s clock."""


GATEWAY_HEADER_PREFIXES = ("x-litellm-",)
"""Headers that mark an answer as a retrying gateway's (LiteLLM's proxy)."""


def retried_upstream(headers: httpx2.Headers) -> bool:
    """Whether a gateway that retries failing models itself sent this answer."""
    return any(name.lower().startswith(GATEWAY_HEADER_PREFIXES) for name in headers)


def retry_after_seconds(headers: httpx2.Headers) -> float | None:
    """The wait a server asked for: ``retry-after-ms``, or ``Retry-After`` in seconds or as a
    date; None when it asked for none (or it cannot be read)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            if name == "retry-after" and (when := email.utils.parsedate_tz(value)) is not None:
                return max(0.0, email.utils.mktime_tz(when) - time.time())
    return None


_tries: ContextVar[_Tries | None] = ContextVar("dcode_model_request_tries", default=None)


class ModelHttpClient(openai.DefaultAsyncHttpxClient):
    """The HTTP client of the model: connect and first-byte deadlines on every try, and the
    answer's body read ahead, merged (``ArgsDeltaMerger``) and its failures marked as mid-answer.

    Reads and writes have no httpx timeout of their own: the first-byte deadline covers sending
    the request and waiting for the answer, and the stall timeout covers the answer.
    """

    def __init__(self, limits: Limits, **kwargs: Any) -> None:
        # Built here, once, so that ``sync_twin`` can share it: loading the CA bundle into a
        # context is the costly part of making a client (~40 ms).
        self.ssl_context = httpx2.create_ssl_context()
        super().__init__(timeout=limits.httpx_timeout, verify=self.ssl_context, **kwargs)
        self.limits = limits

    def sync_twin(self) -> httpx2.Client:
        """A synchronous client with this one's TLS context, for ChatOpenAI's synchronous
        methods: without one it builds its own, loading the CA bundle again, though dcode's
        turns only ever call the model asynchronously. It opens no connection until used."""
        return openai.DefaultHttpxClient(verify=self.ssl_context, timeout=self.timeout)

    async def send(
        self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any
    ) -> httpx2.Response:
        tries = _tries.get()
        if tries is not None:
            tries.count += 1
        deadline = asyncio.timeout(self.limits.first_byte)
        try:
            async with deadline:
                response = await super().send(request, stream=True, **kwargs)
        except TimeoutError:
            if not deadline.expired():
                raise
            _note(tries, f"nothing within {self.limits.first_byte:g} s")
            raise FirstByteTimeout(self.limits.first_byte, request) from None
        except httpx2.ConnectTimeout as exc:
            _note(tries, f"no connection within {self.limits.connect:g} s")
            raise ConnectTimedOut(self.limits.connect, request) from exc
        except httpx2.TransportError as exc:
            _note(
                tries,
                "could not connect"
                if isinstance(exc, httpx2.ConnectError)
                else "the connection failed",
            )
            raise
        _note(tries, f"HTTP {response.status_code}")
        sse = response.headers.get("content-type", "").startswith(
            "text/event-stream"
        ) and not response.headers.get("content-encoding")
        body = cast("httpx2.AsyncByteStream", response.stream)  # an async transport's response
        response.stream = AnswerStream(
            body, request, ArgsDeltaMerger() if sse else None, stall=self.limits.stall, sse=sse
        )
        if not stream:
            try:
                await response.aread()
            except BaseException:
                await response.aclose()
                raise
        return response


def _note(tries: _Tries | None, outcome: str) -> None:
    if tries is not None:
        tries.last = outcome


class BudgetedAsyncOpenAI(openai.AsyncOpenAI):
    """The OpenAI client, with one deadline over a request's tries (``retry_budget``).

    ``request`` returns once the answer has started (a stream, for streamed calls), so the
    budget never cuts an answer short, only the waiting and retrying before it.
    """

    def __init__(self, *, retry_budget: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.retry_budget = retry_budget

    def _should_retry(self, response: httpx2.Response) -> bool:
        """The OpenAI client's rule, and dcode's two (see the module's docstring)."""
        explicit = response.headers.get("x-should-retry") in {"true", "false"}
        if not explicit and response.status_code >= 500 and retried_upstream(response.headers):
            _note(_tries.get(), f"HTTP {response.status_code} from a gateway that had retried it")
            return False
        if not super()._should_retry(response):
            return False
        wait, tries = retry_after_seconds(response.headers), _tries.get()
        if (
            wait is not None
            and tries is not None
            and tries.deadline is not None
            and time.monotonic() + wait > tries.deadline
        ):
            _note(
                tries,
                f"HTTP {response.status_code}, asked to wait {wait:g} s: past the retry budget",
            )
            return False
        return True

    async def request(
        self, cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
    ) -> Any:
        if self.retry_budget is None:
            return await super().request(cast_to, options, stream=stream, stream_cls=stream_cls)
        tries = _Tries(deadline=time.monotonic() + self.retry_budget)
        token = _tries.set(tries)
        deadline = asyncio.timeout(self.retry_budget)
        try:
            async with deadline:
                return await super().request(cast_to, options, stream=stream, stream_cls=stream_cls)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise RetryBudgetExceeded(self.retry_budget, max(tries.count, 1), tries.last) from None
        finally:
            _tries.reset(token)


_MID_ANSWER_ERRORS = (httpx2.TransportError, ssl.SSLError, anyio.EndOfStream)
_END = object()


class AnswerStream(httpx2.AsyncByteStream):
    """A response body read ahead by its own task.

    While the client is busy with one batch, the task keeps taking what the server sends, so the
    next read returns everything that arrived meanwhile in one piece (merged by ``merger``, when
    given). Nothing waits for more data than has arrived. A transport failure while reading
    becomes ``ClosedMidAnswer``, after the bytes that came before it; ``stall`` seconds without
    an event (an SSE comment is none) become ``StreamStalled``.

    Iterating again continues where the last iteration stopped, as httpx's own body streams do
    (the OpenAI client drains the rest of a body that way after ``[DONE]``): there is one reader.
    """

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        request: httpx2.Request,
        merger: ArgsDeltaMerger | None,
        *,
        stall: float = 0.0,
        sse: bool = False,
    ) -> None:
        self._inner = inner
        self._request = request
        self._merger = merger
        self._arrived: asyncio.Queue[Any] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._done = False
        self._stall = stall
        self._progress = _Progress(sse)

    @property
    def elapsed(self) -> Any:
        return getattr(self._inner, "elapsed", None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read(self._arrived))
        while not self._done:
            batch = [await self._next()]
            while not self._arrived.empty():
                batch.append(self._arrived.get_nowait())
            end = batch.pop() if batch[-1] is _END or isinstance(batch[-1], BaseException) else None
            self._done = end is not None
            data = b"".join(batch)
            if self._merger is not None:
                data = self._merger.feed(data) + (self._merger.flush() if self._done else b"")
            if data:
                yield data
            if isinstance(end, BaseException):
                raise end

    async def _next(self) -> Any:
        """The next piece, within ``stall`` seconds of the last event (keep-alives arrive, but
        do not move the deadline)."""
        if not self._stall:
            return await self._arrived.get()
        loop = asyncio.get_running_loop()
        while True:
            deadline = asyncio.timeout_at(self._progress.last + self._stall)
            try:
                async with deadline:
                    return await self._arrived.get()
            except TimeoutError:
                if not deadline.expired():
                    raise
                if loop.time() >= self._progress.last + self._stall:
                    raise StreamStalled(self._stall, self._request) from None

    async def _read(self, arrived: asyncio.Queue[Any]) -> None:
        try:
            async for piece in self._inner:
                self._progress.saw(piece)
                arrived.put_nowait(piece)
        except _MID_ANSWER_ERRORS as exc:
            failure = ClosedMidAnswer(
                f"the connection was closed mid-answer: {exc}", request=self._request
            )
            failure.__cause__ = exc
            arrived.put_nowait(failure)
        except Exception as exc:  # noqa: BLE001 - handed to the reader of the body as it is
            arrived.put_nowait(exc)
        else:
            arrived.put_nowait(_END)

    async def aclose(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        await self._inner.aclose()


class _Progress:
    """When the answer last moved: any byte of a body, or of an SSE stream any byte on a line
    that is not a comment (``: keepalive`` lines keep a connection open, and say nothing)."""

    def __init__(self, sse: bool) -> None:
        self.last = asyncio.get_running_loop().time()
        self._sse = sse
        self._line_start = True
        self._comment = False

    def saw(self, piece: bytes) -> None:
        if not self._sse:
            self.last = asyncio.get_running_loop().time() if piece else self.last
            return
        moved = False
        for number, segment in enumerate(piece.split(b"\n")):
            if number:
                self._line_start = True
            if not segment.strip(b"\r"):
                continue
            if self._line_start:
                self._comment, self._line_start = segment.startswith(b":"), False
            moved = moved or not self._comment
        if moved:
            self.last = asyncio.get_running_loop().time()
