"""dcode against the MCP project's own reference servers (``@modelcontextprotocol/server-everything``
and ``server-filesystem`` from npm, see ``tests/support/npm_servers.py``): the tiny image whose
colour profile has a wrong checksum, resource links, resources and prompts, progress, roots,
and a filesystem server started without directories, which works in the roots it is offered.
server-everything over streamable HTTP and SSE too, restarted under dcode: the next call finds
the new process (it answers the old session with 400)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from dcode.agent.events import ToolProgress
from dcode.mcp.state import LinkState
from dcode.mcp.tools import langchain_tool
from dcode.media.attachment import is_reference_block
from tests.support.npm_servers import everything_over, npm_entry
from tests.test_mcp_links import tools_of, until
from tests.test_mcp_servers import call, manager, servers


async def test_server_everything(tmp_path: Path) -> None:
    mcp = manager(tmp_path, connect_timeout=30)
    mcp.add(servers(tmp_path, {"everything": npm_entry("server-everything", "stdio")}))
    try:
        turn = await mcp.for_turn()
        (status,) = turn.servers
        assert status.error == "" and status.instructions
        tools = tools_of(turn)
        image = await call(tools["mcp__everything__get-tiny-image"])
        assert image.status == "success" and any(
            is_reference_block(b) for b in image.content if isinstance(b, dict)
        ), image.content
        links = (await call(tools["mcp__everything__get-resource-links"], count=2)).content
        assert (
            "[resource Text Resource 2 (text/plain): demo://resource/dynamic/text/2] Resource 2: plaintext resource"
            in links.splitlines()
        )
        roots = (await call(tools["mcp__everything__get-roots-list"])).content
        assert tmp_path.as_uri() in roots
        read = await call(
            tools["read_mcp_resource"], server="everything", uri="demo://resource/dynamic/text/3"
        )
        assert read.status == "success" and "Resource 3" in read.content, read.content
        assert "Paris" in await mcp.expand_prompt("/mcp__everything__args-prompt Paris")
        events: list[object] = []
        link = mcp.links["everything"]
        (long,) = [t for t in link.tools if t.name == "trigger-long-running-operation"]
        runtime = SimpleNamespace(
            tool_call_id="call-1", context=SimpleNamespace(emit=events.append)
        )
        await langchain_tool(link, long, mcp.store).coroutine(runtime=runtime, duration=1, steps=2)
        await until(lambda: len(events) == 2, 5)
        assert [e.progress for e in events if isinstance(e, ToolProgress)] == [1, 2]
    finally:
        await mcp.close()


async def test_a_filesystem_server_without_directories_uses_the_roots(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("inside the workspace\n")
    mcp = manager(tmp_path, connect_timeout=30)
    mcp.add(servers(tmp_path, {"files": npm_entry("server-filesystem")}))
    try:
        tools = tools_of(await mcp.for_turn())
        # The server asks for the roots once it is initialized, while dcode may already call it.
        allowed = ""
        for _ in range(50):
            allowed = (await call(tools["mcp__files__list_allowed_directories"])).content
            if str(tmp_path.resolve()) in allowed:
                break
            await asyncio.sleep(0.1)
        assert str(tmp_path.resolve()) in allowed
        read = await call(tools["mcp__files__read_text_file"], path=str(tmp_path / "notes.txt"))
        assert read.status == "success" and read.content == "inside the workspace\n"
    finally:
        await mcp.close()


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_server_everything_over_the_web_and_restarted(tmp_path: Path, transport: str) -> None:
    with everything_over(transport) as web:
        mcp = manager(tmp_path, connect_timeout=30, call_timeout=30)
        mcp.add(servers(tmp_path, {"web": {"type": transport, "url": web.url}}))
        try:
            tools = tools_of(await mcp.for_turn())
            echo = await call(tools["mcp__web__echo"], message="first")
            assert echo.status == "success" and echo.content == "Echo: first", echo.content
            image = await call(tools["mcp__web__get-tiny-image"])
            assert any(is_reference_block(b) for b in image.content if isinstance(b, dict))
            web.kill()
            await asyncio.sleep(0.3)
            await asyncio.to_thread(web.start)  # a new process: dcode's session means nothing
            started = time.monotonic()
            again = await asyncio.wait_for(call(tools["mcp__web__echo"], message="again"), 25)
            assert again.status == "success" and again.content == "Echo: again", again.content
            assert time.monotonic() - started < 10
            assert mcp.snapshot().servers[0].state is LinkState.CONNECTED
        finally:
            await mcp.close()
