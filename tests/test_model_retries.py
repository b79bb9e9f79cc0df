"""Retries do not multiply behind a gateway, and a server's word on retrying is kept.

The scripted server answers as LiteLLM's proxy does when the model behind it keeps failing
(its ``x-litellm-`` headers on a 500, after it has retried upstream itself), as a server that
says ``x-should-retry``, and as one that asks for a wait with ``Retry-After``; the requests it
counts and the times it received them are the measure. ``tests/test_model_litellm.py`` runs
the same against a real LiteLLM proxy where one is installed.
"""

from __future__ import annotations

from tests.support.model_server import fault, reply
from tests.test_model_limits import headless

LITELLM_HEADERS = {
    "x-litellm-call-id": "8827b6a4",
    "x-litellm-version": "1.80.0",
    "llm_provider-x-request-id": "req_4",
}


async def test_a_gateway_that_retried_upstream_is_not_retried(
    server, make_settings, api: str
) -> None:
    server.script(fault.status(500, headers=LITELLM_HEADERS, repeat=True))
    code, _, lines = await headless(make_settings(api, max_retries=4, retry_budget=60))
    assert code == 1 and len(lines) == 1 and "model server error (500)" in lines[0]
    assert len(server.requests) == 1  # LiteLLM's own tries are all there is


async def test_a_gateway_that_asks_for_a_retry_gets_one(server, make_settings, api: str) -> None:
    server.script(
        fault.status(500, headers={**LITELLM_HEADERS, "x-should-retry": "true"}),
        reply("second time"),
    )
    code, out, _ = await headless(make_settings(api, max_retries=4))
    assert (code, out.strip(), len(server.requests)) == (0, "second time", 2)


async def test_x_should_retry_false_is_final(server, make_settings, api: str) -> None:
    server.script(fault.status(503, headers={"x-should-retry": "false"}, repeat=True))
    code, _, lines = await headless(make_settings(api, max_retries=4))
    assert code == 1 and "model server error (503)" in lines[0] and len(server.requests) == 1


async def test_a_plain_server_error_is_still_retried(server, make_settings, api: str) -> None:
    server.script(fault.status(500).times(2), reply("third time"))
    code, out, _ = await headless(make_settings(api, max_retries=4))
    assert (code, out.strip(), len(server.requests)) == (0, "third time", 3)


async def test_retry_after_is_waited_for(server, make_settings, api: str) -> None:
    server.script(fault.status(429, retry_after=1), reply("after the wait"))
    code, out, _ = await headless(make_settings(api, max_retries=4))
    first, second = server.requests
    assert (code, out.strip()) == (0, "after the wait")
    assert second.received_at - first.received_at >= 0.9  # server-side clock: the wait was kept


async def test_a_retry_after_past_the_budget_is_not_waited_for(
    server, make_settings, api: str
) -> None:
    """A wait that ends after the retry budget cannot lead to an answer: the 429 is reported
    at once, with the wait it asked for, instead of a budget line after a futile sleep."""
    server.script(fault.status(429, retry_after=30, repeat=True))
    code, _, lines = await headless(make_settings(api, max_retries=4, retry_budget=5))
    assert code == 1 and len(lines) == 1 and len(server.requests) == 1
    assert "rate limited (429)" in lines[0] and "it asked to wait 30 s" in lines[0], lines[0]
    assert "retry budget" not in lines[0]
