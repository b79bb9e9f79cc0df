"""Sessions run on a dcode server (``dcode --server URL``): the remote engine against a real
``dcode serve`` (``langgraph dev`` on loopback), with the scripted model behind it."""

from __future__ import annotations

import uuid

from dcode.agent.approval import HeadlessApprover
from dcode.agent.events import Event
from dcode.server.client import RemoteServer
from dcode.server.remote import RemoteRunner
from dcode.settings.config import ApprovalMode
from tests.support.langgraph_server import ServedDcode
from tests.support.model_server import reply, tool_call


def remote(served: ServedDcode, mode: ApprovalMode = ApprovalMode.ALL) -> RemoteRunner:
    server = RemoteServer(served.url, served.token)
    return RemoteRunner(server, str(uuid.uuid4()), HeadlessApprover(), mode)


async def events_of(runner: RemoteRunner, prompt: str) -> list[Event]:
    return [event async for event in runner.run_turn(prompt)]


async def test_smoke(langgraph_server: ServedDcode) -> None:
    served = langgraph_server
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "echo hi"})]),
        reply("It printed hi."),
    )
    events = await events_of(remote(served), "run echo")
    for e in events:
        print(e)
    assert events[-1].result == "It printed hi."
