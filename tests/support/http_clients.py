"""HTTP clients of a test's own for ``ChatOpenAI`` built directly in tests.

Without one, langchain-openai shares one async client per (base URL, timeout) across the
process. Each test runs on an event loop of its own, and when the OS hands a later test's
scripted server a port an earlier one used, the shared pool offers that test a connection
that belongs to a closed loop ("Event loop is closed"). dcode itself passes its engine's own
client for the same reason (``dcode/agent/engine.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

_OPEN: list[tuple[asyncio.AbstractEventLoop | None, Any]] = []


def own_http_client() -> Any:
    """A fresh async client, closed when the test ends (with ``closes_http_clients``)."""
    client = openai.DefaultAsyncHttpxClient()
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None  # made outside a loop: its connections are made in the test's
    _OPEN.append((loop, client))
    return client


@pytest.fixture(autouse=True)
async def closes_http_clients() -> AsyncIterator[None]:
    """Close the clients made on this test's loop. One made in a module without this fixture
    (through a helper it imports) belongs to a loop already closed: its connections went with
    that loop, and closing them on this one would fail this test for another's."""
    yield
    running = asyncio.get_running_loop()
    while _OPEN:
        loop, client = _OPEN.pop()
        if loop is None or loop is running:
            await client.aclose()
