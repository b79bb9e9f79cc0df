"""HTTP clients of a test's own for ``ChatOpenAI`` built directly in tests.

Without one, langchain-openai shares one async client per (base URL, timeout) across the
process. Each test runs on an event loop of its own, and when the OS hands a later test's
scripted server a port an earlier one used, the shared pool offers that test a connection
that belongs to a closed loop ("Event loop is closed"). dcode itself passes its engine's own
client for the same reason (``dcode/agent/engine.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

_OPEN: list[Any] = []


def own_http_client() -> Any:
    """A fresh async client, closed when the test ends (with ``closes_http_clients``)."""
    client = openai.DefaultAsyncHttpxClient()
    _OPEN.append(client)
    return client


@pytest.fixture(autouse=True)
async def closes_http_clients() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()
