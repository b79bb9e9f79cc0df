"""Links that die are noticed and made again: a server killed in the middle of a call, a
server restarted (it no longer knows dcode's session: HTTP 404), an SSE stream that goes
silent past its read timeout. And a call that times out or is cancelled (Esc) is cancelled on
the server too. Real FastMCP servers, over streamable HTTP, SSE and stdio."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from dcode.mcp.link import LinkState
from tests.support.mcp_fixtures import restartable_server, stdio_entry
from tests.test_mcp_servers import call, manager, servers


def tools_of(turn) -> dict:
    return {t.name: t for t in turn.tools}


async def until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_restarted_server_is_connected_again_at_the_next_call(
    tmp_path: Path, transport: str
) -> None:
    with restartable_server(transport) as web:
        mcp = manager(tmp_path, call_timeout=30)
        mcp.add(servers(tmp_path, {"web": {"type": transport, "url": web.url}}))
        try:
            tools = tools_of(await mcp.for_turn())
            assert (await call(tools["mcp__web__add"], a=1, b=2)).content == "3"
            web.kill()
            await asyncio.sleep(0.3)
            await asyncio.to_thread(web.start)  # a new process: dcode's session means nothing to it
            started = time.monotonic()
            again = await asyncio.wait_for(call(tools["mcp__web__add"], a=20, b=22), 20)
            assert again.status == "success" and again.content == "42", again.content
            assert time.monotonic() - started < 10
            assert mcp.snapshot().servers[0].state is LinkState.CONNECTED
        finally:
            await mcp.close()


async def test_a_call_in_flight_when_the_server_dies_ends_at_once(tmp_path: Path) -> None:
    with restartable_server("http") as web:
        mcp = manager(tmp_path, call_timeout=60)
        mcp.add(servers(tmp_path, {"web": {"type": "http", "url": web.url}}))
        try:
            tools = tools_of(await mcp.for_turn())
            marker = tmp_path / "never.txt"
            running = asyncio.create_task(
                call(tools["mcp__web__wait"], seconds=30, marker=str(marker))
            )
            await asyncio.sleep(0.5)
            web.kill()
            started = time.monotonic()
            result = await asyncio.wait_for(running, 15)
            assert time.monotonic() - started < 5
            assert result.status == "error" and result.content.startswith(
                "the MCP server web stopped during wait: connection lost"
            )
            # The link says it is down, never "connected" on a dead session.
            assert mcp.snapshot().servers[0].state is not LinkState.CONNECTED
            await asyncio.to_thread(web.start)
            again = await asyncio.wait_for(call(tools["mcp__web__add"], a=2, b=2), 20)
            assert again.content == "4"
        finally:
            await mcp.close()


async def test_an_sse_stream_that_goes_silent_is_made_again(tmp_path: Path) -> None:
    with restartable_server("sse") as web:
        mcp = manager(tmp_path)
        mcp.link_options = {"sse_read_timeout": 1.0, "steady_after": 0.5}
        mcp.add(servers(tmp_path, {"events": {"type": "sse", "url": web.url}}))
        try:
            tools = tools_of(await mcp.for_turn())
            link = mcp.links["events"]
            assert link.generation == 1
            await until(lambda: link.generation >= 2 and link.state is LinkState.CONNECTED)
            result = await asyncio.wait_for(call(tools["mcp__events__add"], a=1, b=2), 10)
            assert result.content == "3"
        finally:
            await mcp.close()


async def test_a_call_that_times_out_is_cancelled_on_the_server(tmp_path: Path) -> None:
    mcp = manager(tmp_path, call_timeout=0.5)
    mcp.add(servers(tmp_path, {"calc": stdio_entry()}))
    marker = tmp_path / "cancelled.txt"
    try:
        tools = tools_of(await mcp.for_turn())
        result = await call(tools["mcp__calc__wait"], seconds=20, marker=str(marker))
        assert result.content == "wait on the MCP server calc did not answer within 0.5 s"
        await until(marker.exists, 5)
        assert marker.read_text() == "cancelled"
        assert (await call(tools["mcp__calc__add"], a=1, b=1)).content == "2"
    finally:
        await mcp.close()


async def test_esc_cancels_the_call_on_the_server(tmp_path: Path) -> None:
    mcp = manager(tmp_path, call_timeout=60)
    mcp.add(servers(tmp_path, {"calc": stdio_entry()}))
    marker = tmp_path / "cancelled.txt"
    try:
        tools = tools_of(await mcp.for_turn())
        running = asyncio.create_task(
            call(tools["mcp__calc__wait"], seconds=20, marker=str(marker))
        )
        await asyncio.sleep(0.5)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await until(marker.exists, 5)
        assert marker.read_text() == "cancelled"
    finally:
        await mcp.close()


async def test_a_forgotten_session_is_replaced_and_the_call_sent_again(tmp_path: Path) -> None:
    with restartable_server("http") as web:
        mcp = manager(tmp_path, call_timeout=30)
        mcp.add(servers(tmp_path, {"web": {"type": "http", "url": web.url}}))
        try:
            tools = tools_of(await mcp.for_turn())
            assert (await call(tools["mcp__web__forget"])).content == "forgotten"
            started = time.monotonic()
            again = await asyncio.wait_for(call(tools["mcp__web__add"], a=5, b=6), 20)
            assert again.status == "success" and again.content == "11", again.content
            assert time.monotonic() - started < 10
            assert (
                mcp.links["web"].generation == 2
                and mcp.snapshot().servers[0].state is LinkState.CONNECTED
            )
        finally:
            await mcp.close()
