"""What a served run gets from the server's workspace, as an embedded turn gets it: the MCP
servers ``dcode`` starts there (a real FastMCP server of the user's; the project's, which the
user never approved, never starts), the hooks of its settings (a ``PreToolUse`` hook blocks a
call on the server), and the session's budget, counted in the server's session store and
stopping the run with the embedded runner's line. Against a real ``dcode serve``
(``langgraph dev`` on loopback), with a workspace and home of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.budget import Limits
from dcode.agent.events import Event, HookStarted, Notice, TurnFinished
from dcode.server.client import RemoteServer
from dcode.server.remote import RemoteRunner
from dcode.settings.config import ApprovalMode
from tests.support.langgraph_server import (
    ServedDcode,
    require_server_extra,
    serve_dcode,
    serve_env,
)
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_server_graph import new_thread, stream_run, turn

DCODE = str(Path(sys.executable).with_name("dcode"))
REFUSAL = "forbidden commands are refused on this server"
BLOCK_FORBIDDEN = f"""#!/usr/bin/env bash
if grep -q forbidden; then
  echo "{REFUSAL}" >&2
  exit 2
fi
exit 0
"""
NO_SECRETS = "no secrets in prompts"
CHECK_PROMPT = f"""#!/usr/bin/env bash
input=$(cat)
if printf '%s' "$input" | grep -q secret; then
  echo "{NO_SECRETS}" >&2
  exit 2
fi
if printf '%s' "$input" | grep -q 'which branch'; then
  echo "the branch is served-main"
fi
exit 0
"""
SESSION_START = """#!/usr/bin/env bash
echo "the session started on the server"
"""
SESSION_END = """#!/usr/bin/env bash
(cat; echo) >> "$(dirname "$0")/session-ends.jsonl"
"""
SERVER_TOKENS = 1_000_000
"""The server's own ``budget_tokens``: the limit of a session whose client sets none."""
STOP_ONCE = """#!/usr/bin/env bash
if [ -f stop-once ]; then
  rm stop-once
  echo "run the tests first" >&2
  exit 2
fi
exit 0
"""


@pytest.fixture(scope="module")
def workspace_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedDcode]:
    """``dcode serve`` whose user has an MCP server (``calc``) and hooks in their config
    (``PreToolUse`` refuses ``forbidden`` commands, ``UserPromptSubmit`` refuses prompts with
    a secret and answers ``which branch``, ``Stop`` sends the agent back once where the
    workspace holds ``stop-once``, ``SessionEnd`` writes what it is given to
    ``session-ends.jsonl`` beside the workspace), with a budget of ``SERVER_TOKENS``, in a workspace whose ``.mcp.json`` holds a server nobody approved
    (``intruder``: it writes its pid to ``intruder.pid`` when it starts)."""
    require_server_extra()
    root = tmp_path_factory.mktemp("served-workspace")
    scripts = {}
    for name, text in (
        ("block_forbidden", BLOCK_FORBIDDEN),
        ("check_prompt", CHECK_PROMPT),
        ("stop_once", STOP_ONCE),
        ("session_start", SESSION_START),
        ("session_end", SESSION_END),
    ):
        scripts[name] = root / f"{name}.sh"
        scripts[name].write_text(text)
        scripts[name].chmod(0o755)

    def prepare(workspace: Path, home: Path) -> None:
        write_config(home / "mcp.json", {"calc": stdio_entry()})
        marker = root / "intruder.pid"
        write_config(workspace / ".mcp.json", {"intruder": stdio_entry("--marker", str(marker))})
        (home / "config.toml").write_text(
            f"budget_tokens = {SERVER_TOKENS}\n"
            f'[[hooks.PreToolUse]]\nmatcher = "Bash"\n'
            f'hooks = [{{type = "command", command = "{scripts["block_forbidden"]}"}}]\n'
            f"[[hooks.UserPromptSubmit]]\n"
            f'hooks = [{{type = "command", command = "{scripts["check_prompt"]}"}}]\n'
            f"[[hooks.Stop]]\n"
            f'hooks = [{{type = "command", command = "{scripts["stop_once"]}"}}]\n'
            f'[[hooks.SessionStart]]\nmatcher = "startup"\n'
            f'hooks = [{{type = "command", command = "{scripts["session_start"]}"}}]\n'
            f"[[hooks.SessionEnd]]\n"
            f'hooks = [{{type = "command", command = "{scripts["session_end"]}"}}]\n'
        )

    with ScriptedModelServer() as model, serve_dcode(root, model, prepare=prepare) as served:
        yield served


def offered_tools(served: ServedDcode, request: int) -> set[str]:
    body: dict[str, Any] = served.model.requests[request].body
    return {tool["function"]["name"] for tool in body.get("tools") or ()}


async def test_a_served_run_calls_the_users_mcp_server_after_a_remote_approval(
    workspace_server: ServedDcode,
) -> None:
    served = workspace_server
    call = f"call_{uuid.uuid4().hex[:8]}"
    served.model.script(
        reply(tool_calls=[tool_call("mcp__calc__add", {"a": 2, "b": 40}, call_id=call)]),
        reply("It is 42."),
    )
    first = len(served.model.requests)
    thread = await new_thread(served)
    asked = await stream_run(served, thread, input=turn("add 2 and 40"), context={"mode": "edits"})
    tools = offered_tools(served, first)
    assert "mcp__calc__add" in tools
    assert not any(name.startswith("mcp__intruder") for name in tools)
    assert any(
        e["message"].startswith("MCP server calc connected") for e in asked.of_type("notice")
    )
    # An MCP tool asks, as in an embedded session: the question is an interrupt.
    assert [i["value"]["call_id"] for i in asked.interrupts] == [call]
    assert asked.interrupts[0]["value"]["tool"] == "mcp__calc__add"
    resumed = await stream_run(
        served, thread, command={"resume": {"approved": True}}, context={"mode": "edits"}
    )
    assert resumed.text == "It is 42."
    results = [text for role, text in served.model.requests[-1].transcript() if role == "tool"]
    assert results == ["42"]
    # The project's server was never approved: it did not start on the server, which said so.
    assert not (served.workspace.parent / "intruder.pid").exists()
    said = served.log.read_text().splitlines()
    assert any(
        line.startswith("dcode: warning: not starting the MCP servers of") and "(intruder)" in line
        for line in said
    )
    assert served.blocking_calls() == []


async def test_a_pre_tool_use_hook_of_the_servers_settings_blocks_a_served_call(
    workspace_server: ServedDcode,
) -> None:
    served = workspace_server
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "echo forbidden > blocked.txt"})]),
        reply("The server refused it."),
    )
    thread = await new_thread(served)
    run = await stream_run(served, thread, input=turn("write the file"), context={"mode": "all"})
    assert run.text == "The server refused it."
    assert not (served.workspace / "blocked.txt").exists()
    started = run.of_type("hook_started")
    assert [e["event"] for e in started] == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "Stop",
    ]
    finished = run.of_type("hook_finished")
    assert [(e["event"], e["exit_code"]) for e in finished] == [
        ("SessionStart", 0),
        ("UserPromptSubmit", 0),
        ("PreToolUse", 2),
        ("Stop", 0),
    ]
    assert any("PreToolUse hook blocked execute" in e["message"] for e in run.of_type("notice"))
    results = [text for role, text in served.model.requests[-1].transcript() if role == "tool"]
    assert results == [f"denied: {REFUSAL}"]
    assert served.blocking_calls() == []


async def remote_turn(served: ServedDcode, prompt: str) -> tuple[RemoteRunner, list[Event]]:
    """A turn of a new session through the remote runner, as ``dcode --server`` runs it."""
    server = RemoteServer(served.url, served.token)
    runner = RemoteRunner(server, str(uuid.uuid4()), HeadlessApprover(), ApprovalMode.ALL)
    return runner, [event async for event in runner.run_turn(prompt)]


def hooks_started(events: list[Event]) -> list[str]:
    return [e.event for e in events if isinstance(e, HookStarted)]


async def test_a_prompt_hook_on_the_server_refuses_a_remote_prompt_with_the_local_line(
    workspace_server: ServedDcode,
) -> None:
    served = workspace_server
    sent = len(served.model.requests)
    runner, events = await remote_turn(served, "here is my secret: hunter2")
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.is_error
    assert finished.result == f"a UserPromptSubmit hook blocked the prompt: {NO_SECRETS}"
    # On the server, once; no Stop (the session started first: a new thread's first prompt).
    assert hooks_started(events) == ["SessionStart", "UserPromptSubmit"]
    assert len(served.model.requests) == sent  # the model never saw it
    assert await runner.messages() == []  # nor does the thread keep it


async def test_prompt_context_and_a_stop_hook_of_the_server_shape_a_remote_turn(
    workspace_server: ServedDcode,
) -> None:
    served = workspace_server
    (served.workspace / "stop-once").write_text("")
    served.model.script(
        reply("On served-main."), reply("Tests run; still served-main."), reply("Again.")
    )
    first = len(served.model.requests)
    runner, events = await remote_turn(served, "which branch is this?")
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and not finished.is_error
    assert finished.result == "Tests run; still served-main."
    # Each hook ran once per firing, on the server: SessionStart (a new thread),
    # UserPromptSubmit, Stop (blocked), Stop.
    assert hooks_started(events) == ["SessionStart", "UserPromptSubmit", "Stop", "Stop"]
    prompt = served.model.requests[first].transcript()[-1]
    assert prompt[0] == "user" and "the branch is served-main" in prompt[1]
    assert "the session started on the server" in prompt[1]
    assert served.model.requests[first + 1].transcript()[-1] == (
        "user",
        "Stop hook: run the tests first",
    )
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert "a Stop hook asked the agent to go on: run the tests first" in notices
    assert not (served.workspace / "stop-once").exists()
    # The session's next prompt: it has started already.
    again = [event async for event in runner.run_turn("and now?")]
    assert hooks_started(again) == ["UserPromptSubmit", "Stop"]
    assert served.blocking_calls() == []


def dcode(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DCODE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_budget_stops_a_served_run_with_the_local_line_and_the_server_keeps_its_usage(
    workspace_server: ServedDcode, tmp_path: Path
) -> None:
    served = workspace_server
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "echo spent"})], usage=(90, 20)),
        reply("never sent").answering(
            "spend"
        ),  # a second request would take it; no other test does
    )
    sent = len(served.model.requests)
    client = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(tmp_path / "client-home"),
        "OPENAI_API_KEY": "client-key",
        "DCODE_SERVER_TOKEN": served.token,
    }
    argv = ["-p", "spend", "--server", served.url, "--max-tokens", "100", "--approve", "all"]
    ran = dcode([*argv, "--output-format", "json"], tmp_path, client)
    line = "budget reached (110 of 100 tokens); /budget to raise"
    assert ran.returncode == 1, ran.stderr
    assert f"dcode: error: {line}" in ran.stderr
    result = json.loads(ran.stdout.splitlines()[-1])
    assert result["budget_exceeded"] is True and result["is_error"] is True
    assert len(served.model.requests) == sent + 1  # the second request was never sent
    # The server's session store holds what the run spent.
    shown = dcode(
        ["sessions", "show", result["session_id"], "--usage"],
        served.workspace,
        serve_env(served.home),
    )
    assert shown.returncode == 0, shown.stderr
    rows = [row.split() for row in shown.stdout.splitlines()]
    assert ["openai:test-model", "90", "0", "20", "0", "—"] in rows
    assert ["main", "90", "0", "20", "0", "—"] in rows


def session_ends(served: ServedDcode) -> list[dict[str, Any]]:
    """What the server's ``SessionEnd`` hook was given, each time it ran."""
    log = served.workspace.parent / "session-ends.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def client_env(served: ServedDcode, home: Path) -> dict[str, str]:
    """A client machine's environment: its own home, the server's token."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "DCODE_HOME": str(home / "client-home"),
        "OPENAI_API_KEY": "client-key",
        "DCODE_SERVER_TOKEN": served.token,
    }


def test_a_served_session_is_listed_titled_on_the_server_and_its_end_fires_there(
    workspace_server: ServedDcode, tmp_path: Path
) -> None:
    """``dcode -p --server``: the server's session table lists the session by its first prompt
    in the server's workspace, as a local one; once the turn is printed, the session's
    ``SessionEnd`` runs on the server (where its ``SessionStart`` ran), and its events come back
    to the client's stream."""
    served = workspace_server
    served.model.script(reply("Listed."))
    before = len(session_ends(served))
    argv = ["-p", "list me by this prompt", "--server", served.url, "--approve", "all"]
    ran = dcode([*argv, "--output-format", "stream-json"], tmp_path, client_env(served, tmp_path))
    assert ran.returncode == 0, ran.stderr
    lines = [json.loads(line) for line in ran.stdout.splitlines()]
    session = lines[0]["session_id"]
    assert lines[0]["model"] == "openai:test-model"  # the server's, which the client's -p ran on
    assert lines[0]["cwd"] == str(served.workspace)  # where the run works: the server's workspace
    shown = [(line["type"], line.get("event")) for line in lines]
    assert shown[-4:] == [
        ("turn_finished", None),
        ("hook_started", "SessionEnd"),
        ("hook_finished", "SessionEnd"),
        ("result", None),
    ]
    ends = session_ends(served)[before:]
    assert [(e["session_id"], e["reason"]) for e in ends] == [(session, "other")]
    assert ends[0]["cwd"] == str(served.workspace)
    # On the server's machine, as a local session is listed.
    here = dcode(["sessions", "list", "--here"], served.workspace, serve_env(served.home))
    assert here.returncode == 0, here.stderr
    header, *rows = here.stdout.splitlines()
    row = next(line for line in rows if line.startswith(f"{session}  "))  # its whole id
    assert "list me by this prompt" in row and "(untitled)" not in row
    # The id column is as wide as its longest id: the columns after it line up.
    assert header.index("UPDATED") == len(session) + 2
    # And from the client, through the server.
    listed = dcode(
        ["sessions", "list", "--server", served.url], tmp_path, client_env(served, tmp_path)
    )
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if session in line)
    assert row.endswith("list me by this prompt")


async def test_the_servers_spend_and_limits_are_read_through_the_server(
    workspace_server: ServedDcode,
) -> None:
    """A client reads a served session's usage rows from the server's store, and the limits
    its runs are held to there: the client's where it sets them, else the server's."""
    served = workspace_server
    served.model.script(reply("Counted.", usage=(90, 20)))
    runner, events = await remote_turn(served, "count this")
    assert isinstance(events[-1], TurnFinished) and not events[-1].is_error
    rows, limits = await runner.usage()
    assert [(r.model, r.agent, r.input_tokens, r.output_tokens) for r in rows] == [
        ("openai:test-model", "main", 90, 20)
    ]
    assert limits == Limits(None, SERVER_TOKENS)
    runner.limits = lambda: Limits(2.5, None)
    assert (await runner.usage())[1] == Limits(2.5, SERVER_TOKENS)
    # A session that never ran has spent nothing; its end fires nothing anywhere.
    before = len(session_ends(served))
    fresh = RemoteRunner(
        RemoteServer(served.url, served.token),
        str(uuid.uuid4()),
        HeadlessApprover(),
        ApprovalMode.ALL,
    )
    assert (await fresh.usage())[0] == []
    assert await fresh.end_session("other") == []
    ended = await runner.end_session("clear")
    assert [e.event for e in ended if isinstance(e, HookStarted)] == ["SessionEnd"]
    assert [e["reason"] for e in session_ends(served)[before:]] == ["clear"]
    down = RemoteRunner(
        RemoteServer("http://127.0.0.1:9"), runner.session_id, HeadlessApprover(), ApprovalMode.ALL
    )
    down.started = True
    [notice] = await down.end_session("other")
    assert isinstance(notice, Notice)
    assert notice.message.startswith("the server's SessionEnd hooks did not run: cannot reach")


async def test_an_attached_tui_shows_the_servers_spend_and_its_limit_holds_there(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, workspace_server: ServedDcode
) -> None:
    """``/cost`` and ``/budget`` in a TUI attached to the server show what the served session
    spent, as the server's store holds it (this machine's has none of it), against the limits
    its runs are held to there; a limit set with ``/budget`` holds the next run on the server;
    quitting fires the session's ``SessionEnd`` on the server."""
    from tests.test_tui_app_support import running_app

    served = workspace_server
    served.model.script(reply("Counted in the TUI.", usage=(90, 20)).answering("tui count"))
    remote = RemoteServer(served.url, served.token)
    before = len(session_ends(served))
    async with running_app(server, workspace, dcode_home, remote=remote) as h:
        await h.send("tui count")
        await h.until(lambda: "Counted in the TUI." in h.text(), 60, "the served answer")
        await h.idle(60)
        await h.send("/cost")
        await h.until(lambda: "by agent:" in h.text(), 30, "the usage table")
        rows = [line.split() for line in h.text().splitlines()]
        assert any(row[:3] == ["openai:test-model", "90", "0"] for row in rows), h.text()
        await h.send("/budget")
        await h.until(lambda: f"110 of {SERVER_TOKENS:,} tokens" in h.text(), 30, "the budget")
        await h.send("/budget 100 tokens")
        await h.until(lambda: "110 of 100 tokens" in h.text(), 30, "the new limit")
        sent = len(served.model.requests)
        await h.send("tui count again")
        line = "budget reached (110 of 100 tokens); /budget to raise"
        await h.until(lambda: line in h.text(), 60, "the budget's stop")
        await h.idle(60)
        assert len(served.model.requests) == sent  # held on the server
        session = h.app.runner.session_id if h.app.runner is not None else ""
        await h.app.action_quit()
    assert [(e["session_id"], e["reason"]) for e in session_ends(served)[before:]] == [
        (session, "prompt_input_exit")
    ]
    assert len(server.requests) == 0  # the local model was never asked
