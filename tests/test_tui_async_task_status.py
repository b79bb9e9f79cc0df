"""Async tasks in the TUI: each task the model starts is a widget of its own, whose remote
status the session's poller keeps up with between the model's calls (real app, engine, SQLite,
scripted model server, and a real ``langgraph dev`` as the remote agents' server)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path

import pytest

from dcode.agent.events import AsyncTaskStatus, ToolCallFinished, ToolCallRunning
from dcode.agent.tools.result import ToolResult
from dcode.settings.config import ApprovalMode, Settings
from dcode.settings.values import AsyncAgentConfig
from dcode.tui.transcript.model import TranscriptModel
from dcode.tui.transcript.remote_task_view import RemoteTaskView
from tests.support.agent_protocol_server import (
    AgentProtocolServer,
    needs_langgraph_dev,
    serving,
)
from tests.support.agent_protocol_server import langgraph_server as langgraph_server
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_async_subagents import write_config
from tests.test_cli_headless import model_args, run
from tests.test_tui_app_support import Harness, make_settings, running_app

SIZE = (140, 34)
POLLED = 20.0
"""Time enough for the poller (every 3 s) to see a change, on a busy machine."""


def start(description: str, agent: str = "echo", call_id: str | None = None):
    return tool_call(
        "start_async_task", {"description": description, "subagent_type": agent}, call_id=call_id
    )


def settings_for(
    server: ScriptedModelServer, workspace: Path, home: Path, *agents: tuple[str, str]
) -> Settings:
    """Settings that approve everything, with the remote agents (name, url) serving ``echo``."""
    configs = tuple(AsyncAgentConfig(name=name, url=url, assistant="echo") for name, url in agents)
    return make_settings(home, workspace, server, approve=ApprovalMode.ALL, async_agents=configs)


@asynccontextmanager
async def started_task(
    server: ScriptedModelServer,
    workspace: Path,
    home: Path,
    settings: Settings,
    description: str,
    agent: str = "echo",
    answer: str = "Started.",
) -> AsyncIterator[Harness]:
    """The app once its model has started one async task (``description``, on ``agent``) and
    answered ``answer``: the turn is over, and the task is on its own from here."""
    steps = (reply(tool_calls=[start(description, agent)]), reply(answer))
    async with running_app(server, workspace, home, *steps, settings=settings, size=SIZE) as h:
        await h.send("start it")
        await h.idle()
        yield h


async def until_status(h: Harness, *statuses: str) -> None:
    """Wait (as long as the poller may take) for the task's status to be one of ``statuses``."""
    await h.until(lambda: status_of(h) in statuses, POLLED, f"the task {' or '.join(statuses)}")


@pytest.fixture
def echo_settings(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    langgraph_server: AgentProtocolServer,
) -> Settings:
    """Settings with the remote agent ``echo``, served by a real ``langgraph dev``."""
    return settings_for(server, workspace, dcode_home, ("echo", langgraph_server.url))


def task_view(h: Harness) -> RemoteTaskView:
    [view] = h.app.query(RemoteTaskView)
    return view


def status_of(h: Harness) -> str:
    views = list(h.app.query(RemoteTaskView))
    return views[0].status if len(views) == 1 else ""


def task_id(h: Harness) -> str:
    remote = task_view(h).entry.remote
    assert remote is not None
    return remote.task_id


async def test_a_started_task_shows_running_then_success_without_the_model(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    echo_settings: Settings,
) -> None:
    async with started_task(
        server, workspace, dcode_home, echo_settings, "pause 6s then report", answer="Started it."
    ) as h:
        assert "Started it." in h.answers()
        asked = len(server.requests)
        await until_status(h, "running")
        head = h.text()
        short = task_id(h)[:8]
        # Its own widget: the agent, the job, the task's short id, its status and time.
        assert f"echo  pause 6s then report  task {short}…  running · " in head
        assert "1 async running" in head
        await until_status(h, "success")
        screen = h.text()
        assert f"✓ echo  pause 6s then report  task {short}…  success · " in screen
        assert "async running" not in screen
        # The poller asked the remote server, never the model.
        assert len(server.requests) == asked
        # One widget for the one task: the start's call became it.
        assert [call.name for call in h.calls()] == ["start_async_task"]
        # A click shows the whole task id and the job; another folds them again.
        detail = f"task {task_id(h)} on echo"
        assert detail not in screen
        assert await h.pilot.click(RemoteTaskView)
        await h.until(lambda: detail in h.text(), what="the task's details")
        assert task_view(h).expanded
        assert await h.pilot.click(RemoteTaskView)
        await h.until(lambda: detail not in h.text(), what="the task folded")


async def test_a_check_and_a_cancel_change_the_same_widget(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    echo_settings: Settings,
) -> None:
    async with started_task(server, workspace, dcode_home, echo_settings, "a slow job") as h:
        await until_status(h, "running")
        task = task_id(h)
        for name in ("check_async_task", "cancel_async_task"):
            server.script(reply(tool_calls=[tool_call(name, {"task_id": task})]), reply("Done."))
            await h.send(f"{name} please")
            await h.idle()
        assert len(h.app.query(RemoteTaskView)) == 1
        assert status_of(h) == "cancelled"
        assert f"◌ echo  a slow job  task {task[:8]}…  cancelled · " in h.text()
        assert "async running" not in h.text()
        # The cancel's status stays: the poller no longer asks about it.
        await h.pilot.pause(4)
        assert status_of(h) == "cancelled"


async def test_a_server_that_goes_down_is_an_error_status_in_one_line(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, tmp_path: Path
) -> None:
    needs_langgraph_dev()
    with ExitStack() as up:
        remote = up.enter_context(serving(tmp_path / "gone"))
        settings = settings_for(server, workspace, dcode_home, ("gone", remote.url))
        async with started_task(server, workspace, dcode_home, settings, "a slow job", "gone") as h:
            await until_status(h, "pending", "running")
            up.close()  # the server goes down, its task with it
            line = f"async agent 'gone' at {remote.url} is not reachable: All connection attempts failed"
            await h.until(lambda: line in h.text(), POLLED, "the server's error")
            assert status_of(h) == "error"
            assert f"✗ gone  a slow job  task {task_id(h)[:8]}…  error · " in h.text()
            assert "async running" not in h.text()
            # The session goes on: the next prompt is answered.
            server.script(reply("Still here."))
            await h.send("are you there")
            await h.until(lambda: "Still here." in h.text(), what="the next answer")


async def test_a_resumed_session_follows_its_running_task(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    echo_settings: Settings,
) -> None:
    async with started_task(
        server, workspace, dcode_home, echo_settings, "pause 8s then report"
    ) as h:
        assert h.app.runner is not None
        session_id, task = h.app.runner.session_id, task_id(h)
    asked = len(server.requests)
    async with running_app(
        server, workspace, dcode_home, settings=echo_settings, size=SIZE, session_id=session_id
    ) as h:
        await until_status(h, "pending", "running")
        assert task_id(h) == task
        await until_status(h, "success")
        # Its time since the start comes from its record (the replayed result has none).
        assert f"✓ echo  pause 8s then report  task {task[:8]}…  success · " in h.text()
    assert len(server.requests) == asked


def test_headless_prints_the_status_as_json(
    server: ScriptedModelServer, workspace: Path, home: Path, langgraph_server: AgentProtocolServer
) -> None:
    write_config(home, [{"name": "echo", "url": langgraph_server.url, "assistant": "echo"}])
    server.script(reply(tool_calls=[start("a quick job", call_id="call_s")]), reply("ok"))
    result = run(
        ["-p", "go", *model_args(server), "--approve", "all", "--output-format", "stream-json"],
        workspace,
        home,
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    [status] = [e for e in events if e["type"] == "async_task_status"]
    [finished] = [e for e in events if e["type"] == "tool_call_finished"]
    assert status["call_id"] == "call_s" and status["agent_name"] == "echo"
    assert status["status"] in ("pending", "running") and status["description"] == "a quick job"
    assert str(finished["output"]).endswith(f"task_id: {status['task_id']}")
    assert status["error"] == "" and status["agent"] == []


@pytest.mark.parametrize("status", ["running", "success"])
def test_a_resumed_start_is_the_task_as_its_result_said(status: str) -> None:
    """A replay has no status events: the start's result names the task and its status."""
    text = f"Task t-123456789 on echo: {status}. It has started.\ntask_id: t-123456789"
    args = {"description": "a job", "subagent_type": "echo"}
    model = TranscriptModel.replayed(
        [
            ToolCallRunning(call_id="c1", name="start_async_task", args=args, summary=""),
            ToolCallFinished(call_id="c1", name="start_async_task", result=ToolResult.of(text)),
        ]
    )
    [group] = model.entries
    [call] = group.calls  # type: ignore[attr-defined]
    assert call.remote is not None
    assert (call.remote.task_id, call.remote.agent_name, call.remote.status) == (
        "t-123456789",
        "echo",
        status,
    )
    # A later check, in the same model, updates that call (the session resumed, then checked).
    model.turn += 1
    model.apply(
        ToolCallRunning(
            call_id="c2", name="check_async_task", args={"task_id": "t-123456789"}, summary=""
        )
    )
    touched = model.apply(
        AsyncTaskStatus("t-123456789", "echo", "error", "a job", call_id="c2", error="")
    )
    assert [item.entry for item in touched] == [call]
    assert call.remote.status == "error" and model.running_remote_tasks == 0


def test_the_status_crosses_a_dcode_server_as_itself() -> None:
    """An attached TUI reads the event back from the served run's JSON as the same event."""
    from dcode.server.wire import event_of

    event = AsyncTaskStatus(
        "t-1", "echo", "running", "a job", run_id="r-1", created_at="2026-01-31T12:00:00Z"
    )
    assert event_of(json.loads(json.dumps(event.to_json()))) == event
