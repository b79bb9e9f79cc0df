"""Async tasks in the TUI: a start asks first, as a network action, and the started task shows
the remote agent, the job and its status, as a subagent's head does (real app, engine, a real
``langgraph dev`` server and the scripted model)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dcode.settings.values import AsyncAgentConfig
from tests.support.agent_protocol_server import AgentProtocolServer
from tests.support.agent_protocol_server import langgraph_server as langgraph_server
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import make_settings, running_app

PROMPT = "hand the survey to the remote agent"


async def test_a_started_task_asks_then_shows_its_remote_status(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    langgraph_server: AgentProtocolServer,
) -> None:
    agent = AsyncAgentConfig("echo", langgraph_server.url, langgraph_server.assistant)
    settings = replace(make_settings(dcode_home, workspace, server), async_agents=(agent,))
    start = tool_call("start_async_task", {"description": "survey", "subagent_type": "echo"})
    steps = (reply(tool_calls=[start]), reply("It runs on echo."))
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send(PROMPT)
        await h.approval()
        assert "sending work to a remote agent needs approval" in h.text()
        await h.press("y")
        await h.until(lambda: "It runs on echo." in h.text(), what="the answer")
        screen = h.text()
        # Once started, the call is the task's own widget: the agent, the job, its status.
        assert "echo  survey  task " in screen
        assert "…  pending · " in screen or "…  running · " in screen
        await h.idle()
