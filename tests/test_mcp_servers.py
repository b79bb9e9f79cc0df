"""Real MCP servers (FastMCP, in tests/support/mcp_server.py) through dcode's manager: text, an
image, an error, a slow call, a crash and its one restart, a server that fails to start, and
streamable HTTP on loopback with a header from ${VAR}."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from dcode.mcp.config import Scope, parse
from dcode.mcp.link import LinkState
from dcode.mcp.manager import McpManager
from dcode.media.attachment import is_reference_block
from dcode.media.store import AttachmentStore
from dcode.settings.config import McpSettings
from tests.support.mcp_fixtures import (
    alive,
    garbage_entry,
    http_server,
    stdio_entry,
    wait_gone,
    write_config,
)


def servers(tmp_path: Path, entries: dict, env: dict | None = None):
    path = write_config(tmp_path / "mcp.json", entries)
    file = parse(path, Scope.USER, path.read_bytes(), env or {})
    assert not file.problems
    return file.servers


def manager(tmp_path: Path, **settings) -> McpManager:
    return McpManager(
        McpSettings(**settings),
        home=tmp_path / "home",
        workspace=tmp_path,
        store=AttachmentStore(tmp_path / "attachments"),
    )


async def call(tool, **args):
    return await tool.ainvoke(
        {"type": "tool_call", "id": "call-1", "name": tool.name, "args": args}
    )


async def test_stdio_tools_text_image_and_error(tmp_path: Path) -> None:
    mcp = manager(tmp_path)
    mcp.add(servers(tmp_path, {"calc": stdio_entry()}))
    try:
        turn = await mcp.for_turn()
        tools = {t.name: t for t in turn.tools}
        offered = (
            "add",
            "picture",
            "broken",
            "slow",
            "big",
            "crash",
            "note",
            "pid",
            "wait",
            "steps",
            "grow",
            "roots",
            "client",
            "forget",
        )
        assert set(tools) == {f"mcp__calc__{n}" for n in offered} | {"read_mcp_resource"}
        assert turn.notices == ("MCP server calc connected: 14 tools from this turn on",)
        added = await call(tools["mcp__calc__add"], a=2, b=3)
        assert added.status == "success" and added.content == "5"
        picture = await call(tools["mcp__calc__picture"])
        summary, reference = picture.content
        assert summary == {"type": "text", "text": "calc.picture returned 1 image."}
        assert is_reference_block(reference) and (reference["width"], reference["height"]) == (
            100,
            100,
        )
        assert "base64" not in str(picture.content)  # history holds a reference, not bytes
        broken = await call(tools["mcp__calc__broken"])
        assert (
            broken.status == "error"
            and broken.content == "Error executing tool broken: the broken tool is broken"
        )
    finally:
        await mcp.close()


async def test_a_slow_call_times_out_and_the_server_stays(tmp_path: Path) -> None:
    mcp = manager(tmp_path, call_timeout=0.5)
    mcp.add(servers(tmp_path, {"calc": stdio_entry()}))
    try:
        tools = {t.name: t for t in (await mcp.for_turn()).tools}
        started = time.monotonic()
        slow = await call(tools["mcp__calc__slow"], seconds=1.5)
        assert time.monotonic() - started < 1.4
        assert (
            slow.status == "error"
            and slow.content == "slow on the MCP server calc did not answer within 0.5 s"
        )
        await asyncio.sleep(1.2)  # the server finishes the sleep
        assert (await call(tools["mcp__calc__add"], a=1, b=1)).content == "2"
    finally:
        await mcp.close()


async def test_a_crashed_server_is_made_again_until_it_keeps_dying(tmp_path: Path) -> None:
    mcp = manager(tmp_path, call_timeout=10)
    mcp.add(servers(tmp_path, {"calc": stdio_entry()}))
    try:
        tools = {t.name: t for t in (await mcp.for_turn()).tools}
        first_pid = int((await call(tools["mcp__calc__pid"])).content)
        crashed = await call(tools["mcp__calc__crash"])
        assert (
            crashed.status == "error" and "stopped during crash: connection lost" in crashed.content
        )
        assert crashed.content.endswith("it is being reconnected")
        again = await call(tools["mcp__calc__pid"])
        assert again.status == "success" and int(again.content) != first_pid
        assert wait_gone(first_pid)
        # Dying again and again with nothing answered in between: made again twice, then left failed.
        for _ in range(3):
            assert "stopped during crash" in (await call(tools["mcp__calc__crash"])).content
        after = await call(tools["mcp__calc__add"], a=1, b=2)
        assert after.status == "error" and after.content.startswith(
            "the MCP server calc is not running: connection lost"
        )
        assert mcp.snapshot().servers[0].state is LinkState.FAILED
    finally:
        await mcp.close()


async def test_servers_that_fail_to_start_say_why(tmp_path: Path) -> None:
    mcp = manager(tmp_path, connect_timeout=5)
    mcp.add(
        servers(
            tmp_path,
            {"dead": stdio_entry("--fail-start"), "missing": {"command": "dcode-no-such-program"}},
        )
    )
    try:
        turn = await mcp.for_turn()
        assert turn.tools == []
        states = {s.name: (s.state, s.error) for s in turn.servers}
        assert (
            states["dead"][0] is LinkState.FAILED
            and "cannot start: no configuration" in states["dead"][1]
        )
        assert (
            states["missing"][0] is LinkState.FAILED
            and "cannot start dcode-no-such-program" in states["missing"][1]
        )
        assert len(turn.notices) == 2 and all(" failed: " in n for n in turn.notices)
        assert (await mcp.for_turn()).notices == ()  # said once
    finally:
        await mcp.close()


async def test_a_server_that_hangs_at_start_times_out(tmp_path: Path) -> None:
    mcp = manager(tmp_path, connect_timeout=0.5)
    mcp.add(
        servers(
            tmp_path,
            {"mute": {"command": sys.executable, "args": ["-c", "import time; time.sleep(30)"]}},
        )
    )
    try:
        started = time.monotonic()
        turn = await mcp.for_turn()
        assert time.monotonic() - started < 3
        (pid_file,) = (tmp_path / "home" / "mcp-logs").glob("mute.*.pid")
        pid = int(pid_file.read_text())
        (status,) = turn.servers
        assert status.state is LinkState.FAILED and status.error.startswith(
            "did not start within 0.5 s"
        )
    finally:
        await mcp.close()
    assert wait_gone(pid) and not pid_file.exists()


async def test_streamable_http_with_a_header_from_a_variable(tmp_path: Path) -> None:
    with http_server(token="s3cret") as url:
        entries = {
            "web": {
                "type": "http",
                "url": url,
                "headers": {"Authorization": "Bearer ${MCP_TOKEN}"},
            },
            "nologin": {
                "type": "http",
                "url": url,
                "headers": {"Authorization": "Bearer ${MISSING_TOKEN:-wrong}"},
            },
        }
        mcp = manager(tmp_path)
        mcp.add(servers(tmp_path, entries, env={"MCP_TOKEN": "s3cret"}))
        try:
            turn = await mcp.for_turn()
            states = {s.name: s.state for s in turn.servers}
            assert states == {"web": LinkState.CONNECTED, "nologin": LinkState.NEEDS_LOGIN}
            tools = {t.name: t for t in turn.tools}
            assert (await call(tools["mcp__web__add"], a=20, b=22)).content == "42"
            picture = await call(tools["mcp__web__picture"])
            assert is_reference_block(picture.content[1])
        finally:
            await mcp.close()


async def test_close_ends_every_stdio_server(tmp_path: Path) -> None:
    mcp = manager(tmp_path)
    mcp.add(servers(tmp_path, {"a": stdio_entry(), "b": stdio_entry()}))
    turn = await mcp.for_turn()
    pids = [int((await call(t)).content) for t in turn.tools if t.name.endswith("__pid")]
    assert len(pids) == 2 and all(alive(p) for p in pids)
    await mcp.close()
    assert all(wait_gone(p) for p in pids)


async def test_the_older_sse_transport(tmp_path: Path) -> None:
    with http_server(transport="sse") as url:
        mcp = manager(tmp_path)
        mcp.add(servers(tmp_path, {"events": {"type": "sse", "url": url}}))
        try:
            tools = {t.name: t for t in (await mcp.for_turn()).tools}
            assert (await call(tools["mcp__events__add"], a=1, b=2)).content == "3"
        finally:
            await mcp.close()


async def test_garbage_from_a_server_is_a_tool_error(tmp_path: Path) -> None:
    mcp = manager(tmp_path, call_timeout=2)
    mcp.add(servers(tmp_path, {"junk": garbage_entry()}))
    try:
        (tool,) = (await mcp.for_turn()).tools
        result = await call(tool)
        assert result.status == "error" and result.content.startswith("the MCP server junk ")
    finally:
        await mcp.close()
