"""Talking to the configured Agent Protocol servers through ``langgraph-sdk``.

The SDK is imported when a tool first reaches a server, never when dcode starts. Every failure
becomes ``RemoteError``, whose text is the one line the model reads in the tool's result: a
server down, a task it does not know, an assistant it does not serve, credentials it refuses.
"""

# Any: langgraph-sdk's resources are TypedDicts over JSON the server chose

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dcode.mcp.config import expand
from dcode.settings.values import AsyncAgentConfig

if TYPE_CHECKING:
    from langgraph_sdk.client import LangGraphClient

TIMEOUT_SECONDS = 20.0
"""How long one request to a server may take (connecting included)."""
DETAIL_CHARS = 160
WAITING = "interrupted"
"""A thread's status (and so a task's) while it waits on a question for a person."""


class RemoteError(Exception):
    """A request to an async agent's server failed; ``str()`` is the line to show."""


class RemoteAgents:
    """The configured servers by name, each with one client made when first used."""

    def __init__(
        self, agents: Sequence[AsyncAgentConfig], env: Mapping[str, str] | None = None
    ) -> None:
        self.agents = {agent.name: agent for agent in agents}
        self._env = env
        self._clients: dict[str, LangGraphClient] = {}

    def agent(self, name: str) -> AsyncAgentConfig:
        try:
            return self.agents[name]
        except KeyError:
            known = ", ".join(self.agents)
            raise RemoteError(
                f"no async agent named {name!r}; the configured ones: {known}"
            ) from None

    def client(self, name: str) -> LangGraphClient:
        if name not in self._clients:
            agent = self.agent(name)
            from langgraph_sdk import get_client

            # api_key None: the SDK would otherwise send LANGSMITH_API_KEY and the like from the
            # environment to whatever server the user named; headers say what each one gets.
            self._clients[name] = get_client(
                url=agent.url,
                api_key=None,
                headers=self._headers(agent),
                timeout=TIMEOUT_SECONDS,
            )
        return self._clients[name]

    async def run_status(self, name: str, thread_id: str, run_id: str) -> str:
        """A task's run status as its server says it, except that a run which stopped on a
        question for a person (``interrupt()``: an approval, say) is ``interrupted``: LangGraph
        calls that run a ``success``, and only its thread says that it waits."""
        client = self.client(name)
        run = await client.runs.get(thread_id, run_id)
        status = str(run["status"])
        if status == "success":
            thread = await client.threads.get(thread_id)
            if thread.get("status") == WAITING:
                return WAITING
        return status

    def _headers(self, agent: AsyncAgentConfig) -> dict[str, str]:
        env = os.environ if self._env is None else self._env
        missing: list[str] = []
        headers = {key: expand(value, env, missing) for key, value in agent.headers.items()}
        if missing:
            raise RemoteError(
                f"async agent {agent.name!r}: its headers name ${{{missing[0]}}}, which is not set"
            )
        return headers

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


def failure_line(agent: AsyncAgentConfig, exc: BaseException, *, task_id: str = "") -> str:
    """One line saying why a request to ``agent``'s server failed, and what to check."""
    import httpx
    from langgraph_sdk.errors import APIStatusError

    where = f"async agent {agent.name!r} at {agent.url}"
    if isinstance(exc, APIStatusError):
        status, detail = exc.status_code, _detail(exc.body) or exc.message
        if status in (401, 403):
            return f"{where} refused the request ({status}): check its headers in your config"
        if status == 404 and task_id:
            return f"{where} has no task {task_id} (404): it may have been deleted, or the server restarted"
        if status in (404, 422) and "assistant" in detail.lower():
            return f"{where} does not serve assistant {agent.assistant!r} ({status}: {detail})"
        return f"{where} answered {status}: {detail}"
    if isinstance(exc, httpx.TimeoutException):
        return f"{where} did not answer within {TIMEOUT_SECONDS:g}s"
    if isinstance(exc, httpx.HTTPError):
        return f"{where} is not reachable: {_cause(exc)}"
    return f"{where} failed: {type(exc).__name__}: {_cause(exc)}"


def _detail(body: Any) -> str:
    """The server's own words for an error, shortened."""
    text = body.get("detail") or body.get("message") if isinstance(body, dict) else body
    line = " ".join(str(text or "").split())
    return line if len(line) <= DETAIL_CHARS else line[: DETAIL_CHARS - 1] + "…"


def _cause(exc: BaseException) -> str:
    line = " ".join(str(exc).split()) or type(exc).__name__
    return line if len(line) <= DETAIL_CHARS else line[: DETAIL_CHARS - 1] + "…"
