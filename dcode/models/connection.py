"""Quick tests of the configured model: is its server there (doctor and the first-run screen),
and does the model itself answer (``dcode doctor --ping``)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace

from dcode.models.factory import ResolvedModel
from dcode.settings.config import Settings

PING_TIMEOUT_S = 20.0
PING_PROMPT = "Reply with the single word: pong"
REPLY_CHARS = 80


def check_connection(resolved: ResolvedModel, timeout: float = 10.0) -> tuple[bool, str]:
    """List the server's models; fall back to a one-token completion for servers without /models."""
    import openai

    from dcode.models.errors import describe_model_error

    endpoint = resolved.endpoint
    client = openai.OpenAI(
        base_url=endpoint.base_url, api_key=endpoint.api_key, timeout=timeout, max_retries=0
    )
    try:
        names = [m.id for m in client.models.list().data]
    except openai.NotFoundError:
        names = None
    except Exception as exc:  # noqa: BLE001
        return False, describe_model_error(exc, endpoint.base_url)
    if names is not None:
        known = endpoint.spec.model in names
        suffix = (
            "" if known or not names else f" (the server does not list {endpoint.spec.model!r})"
        )
        return True, f"{endpoint.base_url} answered with {len(names)} model(s){suffix}"
    return True, f"{endpoint.base_url} answered"


@dataclass(frozen=True, slots=True)
class Ping:
    """What one tiny request to the model gave: its answer (first line), or the one line saying
    why there was none; and how long it took, sent to answered."""

    ok: bool
    seconds: float
    said: str


def ping_model(
    resolved: ResolvedModel, settings: Settings, timeout: float = PING_TIMEOUT_S
) -> Ping:
    """Send the model one short prompt, as a session would (the same client, wire and
    headers), once: no retries, and at most ``timeout`` seconds."""
    return asyncio.run(_ping(resolved, replace(settings, max_retries=0), timeout))


async def _ping(resolved: ResolvedModel, settings: Settings, timeout: float) -> Ping:
    from langchain_core.messages import HumanMessage

    from dcode.agent.stream import message_text
    from dcode.models.errors import describe_model_error
    from dcode.models.factory import build_chat_model, model_http_client

    http = model_http_client(settings)
    started = time.monotonic()
    try:
        model = build_chat_model(resolved, settings, http)
        answer = await asyncio.wait_for(model.ainvoke([HumanMessage(PING_PROMPT)]), timeout)
    except TimeoutError:
        return Ping(
            False,
            time.monotonic() - started,
            f"{resolved.spec} did not answer within {timeout:g} s",
        )
    except Exception as exc:  # noqa: BLE001 - the check reports every failure as one line
        return Ping(
            False, time.monotonic() - started, describe_model_error(exc, resolved.endpoint.base_url)
        )
    finally:
        await http.aclose()
    seconds = time.monotonic() - started
    text = " ".join(message_text(answer).split())
    if len(text) > REPLY_CHARS:
        text = text[: REPLY_CHARS - 1] + "…"
    return Ping(True, seconds, text or "(an empty answer)")
