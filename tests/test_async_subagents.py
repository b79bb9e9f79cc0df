"""Async subagents end to end: the real ``dcode -p`` loop, driven by the scripted model,
starts, checks, updates, cancels and lists tasks on a real ``langgraph dev`` server on
loopback, one process per turn (each later turn resumes the session: the task records come
back from the checkpoint)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.support.agent_protocol_server import AgentProtocolServer, free_port
from tests.support.agent_protocol_server import langgraph_server as langgraph_server
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_cli_headless import model_args, run

HEADLESS = ("--approve", "all", "--output-format", "stream-json")
REMOTE_ONLY = "remote-only working note"
"""What the echo graph writes in its own thread only (``echo_graph.REMOTE_ONLY``)."""


def write_config(home: Path, agents: list[dict[str, object]]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = []
    for agent in agents:
        lines.append("[[async_agents]]")
        for key, value in agent.items():
            if isinstance(value, dict):
                pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items())
                lines.append(f"{key} = {{ {pairs} }}")
            else:
                lines.append(f"{key} = {json.dumps(value)}")
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def turn(
    server: ScriptedModelServer,
    workspace: Path,
    home: Path,
    calls: list[tuple[str, dict[str, object]]],
    *,
    session: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[str, dict[str, dict[str, object]]]:
    """One headless turn whose model calls ``calls`` at once, then answers "ok": the session's
    id and each finished call's stream-json line, by tool name (the last of a name wins)."""
    server.script(reply(tool_calls=[tool_call(name, args) for name, args in calls]), reply("ok"))
    resume = ["-r", session] if session else []
    result = run(
        ["-p", "go", *resume, *model_args(server), *HEADLESS],
        workspace,
        home,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    finished = {e["name"]: e for e in events if e["type"] == "tool_call_finished"}
    assert len([e for e in events if e["type"] == "tool_call_finished"]) == len(calls)
    end = events[-1]
    assert end["type"] == "result" and end["result"] == "ok", end
    return end["session_id"], finished


def task_id_of(started: dict[str, object]) -> str:
    return str(started["output"]).rsplit("task_id: ", 1)[1].strip()


async def _wait_done(url: str, thread_id: str) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None)
    try:
        for _ in range(100):
            runs = await client.runs.list(thread_id)
            if runs and all(r["status"] not in ("pending", "running") for r in runs):
                return
            await asyncio.sleep(0.1)
        raise AssertionError("the remote run did not finish")
    finally:
        await client.aclose()


async def _thread_count(url: str) -> int:
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None)
    try:
        return len(await client.threads.search(limit=1000))
    finally:
        await client.aclose()


def test_tasks_start_check_update_cancel_and_list(
    server: ScriptedModelServer, workspace: Path, home: Path, langgraph_server: AgentProtocolServer
) -> None:
    write_config(
        home,
        [{"name": "echo", "url": langgraph_server.url, "assistant": langgraph_server.assistant}],
    )
    start = ("start_async_task", {"description": "a slow job", "subagent_type": "echo"})
    session, done = turn(server, workspace, home, [start])
    first = task_id_of(done["start_async_task"])
    assert done["start_async_task"]["status"] == "ok"
    # Shown as a subagent's head is: the agent, its remote status, the task.
    assert done["start_async_task"]["preview"].splitlines()[0] in (
        f"echo · pending · task {first[:8]}…",
        f"echo · running · task {first[:8]}…",
    )

    _, done = turn(
        server, workspace, home, [("check_async_task", {"task_id": first})], session=session
    )
    assert done["check_async_task"]["output"].startswith(f"Task {first} on echo: ")
    assert "has not finished" in done["check_async_task"]["output"]

    update = ("update_async_task", {"task_id": first, "message": "a quick follow-up"})
    _, done = turn(server, workspace, home, [update], session=session)
    assert done["update_async_task"]["output"].endswith(
        "The message went to its thread, in a new run."
    )
    asyncio.run(_wait_done(langgraph_server.url, first))

    _, done = turn(
        server, workspace, home, [("check_async_task", {"task_id": first})], session=session
    )
    check = done["check_async_task"]["output"]
    assert check.startswith(f"Task {first} on echo: success.")
    assert done["check_async_task"]["preview"] == (
        f"echo · success · task {first[:8]}…\nAnswer:\necho: a quick follow-up (2 user messages)"
    )
    # The follow-up went to the same thread: the remote graph counts both user messages.
    assert check.endswith("Answer:\necho: a quick follow-up (2 user messages)")

    _, done = turn(server, workspace, home, [start], session=session)
    second = task_id_of(done["start_async_task"])
    _, done = turn(
        server, workspace, home, [("cancel_async_task", {"task_id": second})], session=session
    )
    assert done["cancel_async_task"]["output"] == f"Task {second} on echo: cancelled."

    lists = [
        ("list_async_tasks", {"status_filter": "cancelled"}),
    ]
    _, done = turn(server, workspace, home, lists, session=session)
    listed = done["list_async_tasks"]["output"].splitlines()
    assert listed == [f"- {second} · echo · cancelled · a slow job"]
    _, done = turn(server, workspace, home, [("list_async_tasks", {})], session=session)
    listed = done["list_async_tasks"]["output"].splitlines()
    assert listed == [
        f"- {first} · echo · success · a slow job",
        f"- {second} · echo · cancelled · a slow job",
    ]

    # Only what the tools returned reached the parent's model: never the remote thread's history.
    sent = [json.dumps(request.body) for request in server.requests]
    assert any("echo: a quick follow-up (2 user messages)" in body for body in sent)
    assert not any(REMOTE_ONLY in body for body in sent)


class _Refusing(BaseHTTPRequestHandler):
    """A server that refuses every request as unauthenticated (for the auth failure), and
    keeps the ``Authorization`` header each one carried."""

    seen: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        body = b'{"detail": "Missing authentication"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_task_waiting_on_a_question_is_said_to_wait_not_to_have_succeeded(
    server: ScriptedModelServer, workspace: Path, home: Path, langgraph_server: AgentProtocolServer
) -> None:
    """A remote run that stopped on ``interrupt()`` (an approval on a dcode server, say) is a
    ``success`` to LangGraph; only its thread waits. The model is told it waits, and on what
    (it read "success" and an empty answer), and the list says so too."""
    write_config(
        home,
        [{"name": "echo", "url": langgraph_server.url, "assistant": langgraph_server.assistant}],
    )
    start = ("start_async_task", {"description": "ask before you go", "subagent_type": "echo"})
    session, done = turn(server, workspace, home, [start])
    task = task_id_of(done["start_async_task"])
    asyncio.run(_wait_done(langgraph_server.url, task))

    check = ("check_async_task", {"task_id": task})
    _, done = turn(server, workspace, home, [check], session=session)
    output = done["check_async_task"]["output"]
    assert output.startswith(f"Task {task} on echo: interrupted. It waits for an answer")
    assert output.endswith('Its question: {"question": "may I go on with ask before you go?"}')
    assert done["check_async_task"]["preview"].startswith(f"echo · interrupted · task {task[:8]}…")
    _, done = turn(server, workspace, home, [("list_async_tasks", {})], session=session)
    assert (
        done["list_async_tasks"]["output"] == f"- {task} · echo · interrupted · ask before you go"
    )


def test_failures_are_one_line_and_the_turn_goes_on(
    server: ScriptedModelServer,
    workspace: Path,
    home: Path,
    langgraph_server: AgentProtocolServer,
    refusing_url: str,
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    threads_before = asyncio.run(_thread_count(langgraph_server.url))
    write_config(
        home,
        [
            {"name": "wrong", "url": langgraph_server.url, "assistant": "nope"},
            {"name": "down", "url": down, "assistant": "echo"},
            {
                "name": "unset",
                "url": down,
                "assistant": "echo",
                "headers": {"X-Key": "${S27C_UNSET}"},
            },
            {
                "name": "locked",
                "url": refusing_url,
                "assistant": "echo",
                "headers": {"Authorization": "Bearer ${S27C_TOKEN}"},
            },
        ],
    )
    calls = [
        ("start_async_task", {"description": "x", "subagent_type": name})
        for name in ("wrong", "down", "unset", "locked")
    ]
    server.script(reply(tool_calls=[tool_call(n, a) for n, a in calls]), reply("ok"))
    result = run(
        ["-p", "go", *model_args(server), *HEADLESS],
        workspace,
        home,
        env={"S27C_TOKEN": "secret"},
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    init = events[0]
    assert init["type"] == "init" and {
        "start_async_task",
        "check_async_task",
        "update_async_task",
        "cancel_async_task",
        "list_async_tasks",
    } <= set(init["tools"])
    outputs = [e["output"] for e in events if e["type"] == "tool_call_finished"]
    assert all("\n" not in line for line in outputs), outputs
    assert sorted(outputs) == sorted(
        [
            (
                f"async agent 'wrong' at {langgraph_server.url} does not serve assistant 'nope' "
                "(422: Invalid assistant: 'nope'. Must be either: - A valid assistant UUID, or - "
                "One of the registered graphs: echo)"
            ),
            f"async agent 'down' at {down} is not reachable: All connection attempts failed",
            "async agent 'unset': its headers name ${S27C_UNSET}, which is not set",
            (
                f"async agent 'locked' at {refusing_url} refused the request (401): check its "
                "headers in your config"
            ),
        ]
    )
    assert events[-1]["result"] == "ok" and events[-1]["is_error"] is False
    # The header's ${S27C_TOKEN} was expanded from the environment when the request was made.
    assert _Refusing.seen == ["Bearer secret"]
    # The refused start left no empty thread on the server.
    assert asyncio.run(_thread_count(langgraph_server.url)) == threads_before
    # An unknown task is one line too, without asking any server.
    session = events[-1]["session_id"]
    server.script(
        reply(tool_calls=[tool_call("check_async_task", {"task_id": "t-1"})]), reply("ok")
    )
    again = run(
        ["-p", "go", "-r", session, *model_args(server), "--output-format", "stream-json"],
        workspace,
        home,
    )
    lines = [json.loads(line) for line in again.stdout.splitlines() if line.strip()]
    [check] = [e for e in lines if e["type"] == "tool_call_finished"]
    assert check["status"] == "error"
    assert check["output"] == (
        "No task t-1 was started in this session; list_async_tasks shows those that were."
    )
