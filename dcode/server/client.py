"""A dcode server as its clients see it: where it is, its token, and its failures in one line.

A client reads the server from ``--server URL`` or ``DCODE_SERVER``, and its credentials from
the environment:

- ``DCODE_SERVER_TOKEN``: ``dcode serve --token``'s token, sent as ``Authorization: Bearer``;
- ``DCODE_SERVER_API_KEY``: an API key, sent as ``x-api-key`` (what a LangSmith Deployment
  asks for); without it, ``LANGSMITH_API_KEY`` is sent so, unless a token is set (a user who
  traces with LangSmith and runs ``dcode serve --token`` does not hand the key to that server).

They go only to the server's own address: the client's requests are all to that base URL, and
it follows no redirect. The shell the agent runs never sees any of them
(``dcode.agent.backends.environment``). Whatever fails on the way (the server is down, the token
is refused, a thread is not there) is said in one line naming the server, never as a traceback.
"""

# Any: langgraph_sdk's client is untyped here

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from dcode.server.options import (
    CLIENT_API_KEY_ENV,
    CLIENT_TOKEN_ENV,
    LANGSMITH_API_KEY_ENV,
    MODEL_KEYS,
    SESSION_ASSISTANT,
)

SERVER_ENV = "DCODE_SERVER"
"""The dcode server a client runs its sessions on when ``--server`` is not given."""


@dataclass
class RemoteServer:
    url: str
    token: str = ""
    api_key: str = field(default="", repr=False)
    _client: tuple[object, Any] | None = field(default=None, repr=False)
    """The event loop and langgraph-sdk's client made in it: its connections belong to that
    loop (``dcode -r`` asks the server before the TUI's loop starts, then the TUI does)."""

    @classmethod
    def from_env(cls, url: str, env: Mapping[str, str] | None = None) -> RemoteServer:
        env = os.environ if env is None else env
        token = env.get(CLIENT_TOKEN_ENV, "")
        api_key = env.get(CLIENT_API_KEY_ENV, "") or (
            "" if token else env.get(LANGSMITH_API_KEY_ENV, "")
        )
        return cls(url.rstrip("/"), token, api_key)

    def headers(self) -> dict[str, str]:
        """What every request to the server carries: who the client is and its credentials."""
        from dcode import __version__

        headers = {"User-Agent": f"dcode/{__version__}"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def client(self) -> Any:
        """langgraph-sdk's client for the server, made once per event loop (it keeps its
        connections). A connection refused is tried once more, not with ``get_client``'s five
        growing waits (7 s and more before a server that is down is said to be)."""
        import asyncio

        loop = asyncio.get_running_loop()
        if self._client is None or self._client[0] is not loop:
            import httpx
            from langgraph_sdk.client import LangGraphClient

            self._client = (
                loop,
                LangGraphClient(
                    httpx.AsyncClient(
                        base_url=self.url,
                        transport=httpx.AsyncHTTPTransport(retries=1),
                        timeout=httpx.Timeout(connect=5, read=300, write=300, pool=5),
                        headers=self.headers(),
                        follow_redirects=False,
                    )
                ),
            )
        return self._client[1]

    async def read(self, path: str, body: object = None, **params: object) -> Any:
        """The JSON of a GET of the server's API (a POST with ``body``), made with the standard
        library's HTTP client in a thread: what ``dcode attach`` reads before it follows a live
        run. langgraph-sdk's client and httpx import half a second of modules, more than
        the reads take. Raises ``ApiError`` for an error answer, ``OSError`` when the server
        cannot be reached."""
        import asyncio

        return await asyncio.to_thread(self.read_now, path, body, **params)

    def read_now(self, path: str, body: object = None, **params: object) -> Any:
        """``read``, blocking."""
        import http.client
        from urllib.parse import urlencode, urlsplit

        parts = urlsplit(self.url)
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = kind(parts.netloc, timeout=READ_TIMEOUT)
        query = f"?{urlencode(params)}" if params else ""
        data = None if body is None else json.dumps(body).encode()
        headers = self.headers() | ({"Content-Type": "application/json"} if data else {})
        try:
            connection.request(
                "GET" if data is None else "POST",
                parts.path.rstrip("/") + path + query,
                body=data,
                headers=headers,
            )
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
        finally:
            connection.close()
        if response.status >= 300:  # a redirect too: followed, it would take the credentials along
            raise ApiError(response.status, text)
        return json.loads(text)


READ_TIMEOUT = 300.0
"""Seconds a plain read waits on the server (a long thread's state is a big answer)."""


class ApiError(Exception):
    """The server's error answer to a plain read (``RemoteServer.read``)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status}: {text[:200]}")
        self.status = status
        self.text = text


class RemoteFailure(Exception):
    """A request the server cannot serve, said in one line."""


async def latest_thread(server: RemoteServer) -> str:
    """The server's most recently updated thread."""
    found = await server.read(
        "/threads/search", {"limit": 1, "sort_by": "updated_at", "sort_order": "desc"}
    )
    if not found:
        raise RemoteFailure(f"no session on the dcode server at {server.url}")
    return str(found[0]["thread_id"])


async def pick_thread(server: RemoteServer, thread_id: str | None, *, latest: bool) -> str | None:
    """The server's thread that ``-r ID`` names (it must be there), or with ``-r``/``-c``
    alone (``latest``) its newest; None for a new one."""
    if thread_id:
        thread = await server.read(f"/threads/{segment(thread_id)}")
        return str(thread["thread_id"])
    return await latest_thread(server) if latest else None


def opened_thread(server: RemoteServer, thread: str) -> tuple[str | None, Any]:
    """What a client opening ``thread`` reads of it (blocking): its run still going on the
    server (running, or queued to), if any, then its state. The run is read first: one that
    ends meanwhile is then whole in the state, or replayed from its stream."""
    running = None
    for status in ("running", "pending"):
        runs = server.read_now(f"/threads/{segment(thread)}/runs", status=status, limit=1)
        if runs:
            running = str(runs[0]["run_id"])
            break
    return running, server.read_now(f"/threads/{segment(thread)}/state")


async def ask_server(server: RemoteServer, ask: str, **fields: str) -> dict[str, Any]:
    """The server's answer to ``ask`` (``dcode.server.session_graph``): a stateless run of its
    ``dcode-session`` graph, whose output is the answer. Raises ``RemoteFailure`` with one line
    for a server that failed or gave no answer."""
    try:
        values = await server.client().runs.wait(
            None, SESSION_ASSISTANT, input={"ask": ask, **fields}, raise_error=False
        )
    except Exception as exc:  # noqa: BLE001 - the server's failure, in one line
        raise RemoteFailure(failure_line(exc, server.url)) from None
    answer = values.get("answer") if isinstance(values, dict) else None
    if isinstance(answer, dict):
        return answer
    error = values.get("__error__") if isinstance(values, dict) else None
    detail = (error.get("message") if isinstance(error, dict) else error) or "no answer"
    raise RemoteFailure(f"the dcode server at {server.url}: {detail}")


@dataclass(frozen=True)
class ServedModel:
    """The model that answers a client's runs on a dcode server, as the server resolved it."""

    spec: str
    effort: str = ""
    max_input_tokens: int | None = None
    workspace: str = ""
    """The server's workspace, where its runs read, write and run commands."""

    @property
    def label(self) -> str:
        """As the TUI names a model: its spec, and its reasoning effort when one is asked."""
        return f"{self.spec} · {self.effort}" if self.effort else self.spec


async def served_model(server: RemoteServer, context: Mapping[str, str]) -> ServedModel:
    """The model a run with ``context`` (a client's run context) answers with on ``server``:
    the server's default, unless the context names another (``-m``). Raises ``RemoteFailure``
    with one line."""
    asked = {key: str(context[key]) for key in MODEL_KEYS if context.get(key)}
    answer = await ask_server(server, "model", **asked)
    window = answer.get("max_input_tokens")
    return ServedModel(
        str(answer.get("spec") or ""),
        str(answer.get("effort") or ""),
        window if isinstance(window, int) else None,
        str(answer.get("workspace") or ""),
    )


def segment(value: str) -> str:
    """``value`` as one segment of a path of the API (a dot segment too: httpx would fold it)."""
    quoted = quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


def failure_line(exc: BaseException, url: str) -> str:
    """One line for a failed call to the server at ``url``."""
    if isinstance(exc, ApiError):
        return _answered(exc.status, _detail(exc.text), url)
    if isinstance(exc, ConnectionRefusedError):
        return _unreachable(url)
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        return _answered(exc.response.status_code, _detail(exc.response.text), url)
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        return _unreachable(url)
    if isinstance(exc, (httpx.TransportError, OSError)):
        return f"the connection to the dcode server at {url} failed: {type(exc).__name__} {exc}"
    return f"the dcode server at {url}: {exc}"


def _answered(status: int, detail: str, url: str) -> str:
    if status == 401:
        return f"the dcode server at {url} refused the client: {detail}"
    if status == 404:
        return f"the dcode server at {url} has no such thread or run: {detail}"
    return f"the dcode server at {url} answered {status}: {detail}"


def _unreachable(url: str) -> str:
    return f"cannot reach the dcode server at {url}: is `dcode serve` running there?"


def _detail(text: object) -> str:
    try:
        body = json.loads(str(text))
    except (ValueError, TypeError):
        return " ".join(str(text or "").split())[:200] or "no detail"
    if isinstance(body, dict) and body.get("detail"):
        return " ".join(str(body["detail"]).split())[:300]
    return " ".join(str(body).split())[:200]
