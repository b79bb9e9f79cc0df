"""``--add-dir DIR``: another directory to work in as in the workspace. Writes there run
without asking in ``edits`` (writes elsewhere still ask), MCP servers are offered it as a root
(the real server-filesystem started without directories works there), and the model is told.
The sandbox's side is in ``tests/test_sandbox_escapes.py``."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from dcode.agent.approval import ApprovalPolicy
from dcode.agent.backends import LocalBackend
from dcode.agent.engine import Engine
from dcode.agent.permissions.match import PermissionRules
from dcode.agent.permissions.rules import Effect, RuleSource, parse_rule
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.settings.config import ConfigError, McpSettings, load_settings
from dcode.settings.values import ApprovalMode
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply, tool_call
from tests.support.npm_servers import npm_entry
from tests.test_context_accounting import figures
from tests.test_mcp_links import tools_of
from tests.test_mcp_servers import call, manager, servers
from tests.test_tui_app_support import make_settings as tui_settings
from tests.test_tui_app_support import running_app


async def headless(settings, prompt: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    request = HeadlessRequest(prompt=prompt, output_format=OutputFormat.JSON)
    code = await run_headless(settings, request, out=out, err=err)
    return code, err.getvalue()


def test_each_directory_is_resolved_and_checked(tmp_path: Path) -> None:
    workspace, home, lib = tmp_path / "ws", tmp_path / "home", tmp_path / "lib"
    (workspace / "sub").mkdir(parents=True)
    (lib / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(lib)
    env = {"DCODE_HOME": str(home)}

    def added(*dirs: object) -> tuple[Path, ...]:
        return load_settings(workspace=workspace, env=env, cli={"add_dirs": list(dirs)}).add_dirs

    assert added(tmp_path / "link", workspace / "sub", lib / "deep") == (lib.resolve(),)
    assert added(lib / "deep", lib) == (lib.resolve(),)  # the wider one is enough
    with pytest.raises(ConfigError, match=r"--add-dir .*nothing: not a directory"):
        added(tmp_path / "nothing")
    with pytest.raises(ConfigError, match="not the whole file system"):
        added("/")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="not a directory"):
        added(tmp_path / "file")


def test_the_command_line_refuses_a_missing_directory_in_one_line(tmp_path: Path) -> None:
    dcode = Path(sys.executable).with_name("dcode")
    done = subprocess.run(
        [str(dcode), "-p", "hi", "--add-dir", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"DCODE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"dcode: error: --add-dir {tmp_path / 'nothing'}: not a directory"


async def test_writes_in_an_added_directory_run_in_edits_and_others_still_ask(
    server, make_settings, workspace: Path, api: str
) -> None:
    lib, elsewhere = workspace.parent / "lib", workspace.parent / "elsewhere"
    lib.mkdir()
    elsewhere.mkdir()
    server.script(
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": str(lib / "a.txt"), "content": "a\n"})
            ]
        ),
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": str(elsewhere / "b.txt"), "content": "b\n"})
            ]
        ),
        reply("done"),
    )
    settings = make_settings(api, approve=ApprovalMode.EDITS, add_dirs=(lib.resolve(),))
    code, err = await headless(settings, "write them")
    assert code == 0, err
    assert (lib / "a.txt").read_text() == "a\n" and not (elsewhere / "b.txt").exists()
    results = [text for role, text in server.transcript(2) if role == "tool"]
    assert results[0].startswith("Created ") and results[1].startswith(
        "denied: writing outside the workspace"
    )
    assert f'You may also work in these directories, as in the workspace: "{lib.resolve()}".' in (
        server.system_text(0)
    )


async def test_without_added_directories_the_prompt_has_no_such_line(
    server, make_settings, api: str
) -> None:
    server.script(reply("hi"))
    code, err = await headless(make_settings(api), "hello")
    assert code == 0, err
    assert "You may also work in" not in server.system_text(0)


async def test_mcp_servers_are_offered_the_added_directories_as_roots(
    server, make_settings, workspace: Path, dcode_home: Path
) -> None:
    """Through a headless run, as ``--add-dir`` builds it: the server's own list of roots."""
    lib = workspace.parent / "lib"
    lib.mkdir()
    write_config(dcode_home / "mcp.json", {"calc": stdio_entry()})
    server.script(reply(tool_calls=[tool_call("mcp__calc__roots", {})]), reply("listed"))
    settings = make_settings(add_dirs=(lib.resolve(),), mcp=McpSettings(allow=("calc__*",)))
    code, err = await headless(settings, "which roots?")
    assert code == 0, err
    [roots] = [text for role, text in server.transcript(1) if role == "tool"]
    assert roots.splitlines() == [workspace.as_uri(), lib.resolve().as_uri()]


async def test_a_filesystem_server_without_directories_works_in_an_added_one(
    tmp_path: Path,
) -> None:
    workspace, lib = tmp_path / "ws", tmp_path / "lib"
    workspace.mkdir()
    lib.mkdir()
    (lib / "notes.txt").write_text("in the added directory\n")
    mcp = manager(workspace, connect_timeout=30)
    mcp.roots = (workspace, lib)
    mcp.add(servers(workspace, {"files": npm_entry("server-filesystem")}))
    try:
        tools = tools_of(await mcp.for_turn())
        read = None
        for _ in range(50):  # it asks for the roots once initialized
            read = await call(tools["mcp__files__read_text_file"], path=str(lib / "notes.txt"))
            if read.status == "success":
                break
            await asyncio.sleep(0.1)
        assert read is not None and read.content == "in the added directory\n", read
    finally:
        await mcp.close()


async def test_context_counts_the_line_naming_the_added_directories(
    make_settings, workspace: Path
) -> None:
    lib = workspace.parent / ("lib-with-a-long-name-" * 10)
    lib.mkdir()
    async with await Engine.open(make_settings()) as plain:
        without = figures(await plain.context_report(None))["system prompt"]
    async with await Engine.open(make_settings(add_dirs=(lib.resolve(),))) as engine:
        added = figures(await engine.context_report(None))["system prompt"]
    assert added > without + 20


async def test_the_first_screen_names_the_added_directories(
    server, workspace: Path, dcode_home: Path
) -> None:
    lib = workspace.parent / "lib"
    lib.mkdir()
    settings = replace(tui_settings(dcode_home, workspace, server), add_dirs=(lib.resolve(),))
    async with running_app(server, workspace, dcode_home, settings=settings) as h:
        await h.pilot.pause()
        assert f"also in    {lib.resolve()}" in h.text()


def test_a_shell_rule_vouches_for_a_redirection_into_an_added_directory(tmp_path: Path) -> None:
    """``Bash(echo:*)`` covers ``echo … > lib/out`` once lib is added; elsewhere it still asks."""
    workspace, lib, elsewhere = tmp_path / "ws", tmp_path / "lib", tmp_path / "elsewhere"
    for directory in (workspace, lib, elsewhere):
        directory.mkdir()
    rules = PermissionRules((parse_rule("Bash(echo:*)", Effect.ALLOW, RuleSource("t")),), workspace)

    def verdict(backend: LocalBackend, target: Path) -> object:
        gate = ApprovalPolicy(ApprovalMode.MANUAL, backend, rules=rules)
        return gate.check("execute", {"command": f"echo hi > {target}/out.txt"})

    added = LocalBackend(workspace, add_dirs=(lib.resolve(),))
    assert verdict(added, lib) is None
    assert verdict(added, elsewhere) is not None
    assert verdict(LocalBackend(workspace), lib) is not None
