"""MCP stdio servers that ask for the sandbox (``"sandbox": true``) run in it, with the real
bubblewrap, and do not start where it cannot."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcode.mcp.config import Scope, parse
from dcode.mcp.link import LinkState
from dcode.mcp.manager import McpManager
from dcode.media.store import AttachmentStore
from dcode.sandbox.confine import Sandbox
from dcode.sandbox.modes import SandboxSettings
from dcode.sandbox.probe import availability
from dcode.settings.config import McpSettings
from tests.support.mcp_fixtures import stdio_entry, write_config

needs_bwrap = pytest.mark.skipif(
    not availability().works, reason=f"no working sandbox here: {availability().problem}"
)


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dcode-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def parsed(tmp_path: Path, entries: dict):
    path = write_config(tmp_path / "mcp.json", entries)
    return parse(path, Scope.USER, path.read_bytes(), {})


def test_the_key_is_true_or_false(tmp_path: Path) -> None:
    file = parsed(
        tmp_path,
        {
            "boxed": {**stdio_entry(), "sandbox": True},
            "plain": stdio_entry(),
            "odd": {**stdio_entry(), "sandbox": "yes"},
        },
    )
    assert {s.name: s.sandbox for s in file.servers} == {"boxed": True, "plain": False}
    assert any("sandbox must be true or false" in str(problem) for problem in file.problems)


def manager(tmp_path: Path, workspace: Path, home: Path) -> McpManager:
    # The shell's sandbox is off: a server that asks for it runs confined all the same.
    sandbox = Sandbox(SandboxSettings(), workspace, home)
    return McpManager(
        McpSettings(connect_timeout=20),
        home=home,
        workspace=workspace,
        store=AttachmentStore(tmp_path / "attachments"),
        sandbox=sandbox,
    )


@needs_bwrap
async def test_a_sandboxed_server_writes_in_the_workspace_only(
    tmp_path: Path, outside: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    escaped, inside = outside / "marker", workspace / "marker"
    mcp = manager(tmp_path, workspace, outside / "home")
    mcp.add(
        parsed(
            tmp_path,
            {
                "boxed": {**stdio_entry("--marker", str(escaped)), "sandbox": True},
                "fine": {**stdio_entry("--marker", str(inside)), "sandbox": True},
            },
        ).servers
    )
    try:
        turn = await mcp.for_turn()
        states = {s.name: s for s in turn.servers}
        assert states["boxed"].state is LinkState.FAILED and not escaped.exists()
        assert "Read-only file system" in states["boxed"].error
        assert states["fine"].state is LinkState.CONNECTED and inside.exists()
        [pid] = [t for t in turn.tools if t.name == "mcp__fine__pid"]
        reply = await pid.ainvoke({"type": "tool_call", "id": "c", "name": pid.name, "args": {}})
        assert int(reply.content) < 10  # its own PID namespace
    finally:
        await mcp.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is the Linux sandbox")
async def test_a_server_that_asks_for_the_sandbox_does_not_start_without_one(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = workspace / "marker"
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    mcp = manager(tmp_path, workspace, outside / "home")
    mcp.add(
        parsed(
            tmp_path, {"boxed": {**stdio_entry("--marker", str(marker)), "sandbox": True}}
        ).servers
    )
    try:
        [status] = (await mcp.for_turn()).servers
        assert status.state is LinkState.FAILED and "not installed" in status.error
        assert not marker.exists()
    finally:
        await mcp.close()
