"""The TUI with its sessions on a dcode server (``dcode --server URL``): the server's question
is the usual dialog, the answer resumes the run there, and Esc cancels the run on the server
(real app, each real server of the ``served`` fixture on loopback, the scripted models)."""

from __future__ import annotations

from pathlib import Path

from dcode.server.client import RemoteServer
from tests.support.langgraph_server import ServedDcode
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import running_app


async def test_a_served_session_asks_in_the_dialog_and_esc_cancels_on_the_server(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    served: ServedDcode,
) -> None:
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "touch tui-approved.txt"})]),
        reply("Touched on the server."),
        reply(tool_calls=[tool_call("execute", {"command": "touch begun.txt; sleep 60"})]),
    )  # nothing after the sleep: the shared model's script is used up when the test ends
    local_requests = len(server.requests)
    remote = RemoteServer(served.url, served.token)
    async with running_app(server, workspace, dcode_home, remote=remote) as h:
        await h.send("touch it")
        await h.approval(timeout=60)
        await h.press("y")
        await h.until(lambda: "Touched on the server." in h.text(), 60, "the served answer")
        await h.idle(60)
        assert (served.workspace / "tui-approved.txt").exists()
        assert not (workspace / "tui-approved.txt").exists()
        runner = h.app.runner
        assert runner is not None
        session = runner.session_id
        await h.send("sleep")
        await h.approval(timeout=60)
        await h.press("y")
        begun = served.workspace / "begun.txt"
        await h.until(begun.exists, 60, "the command to start on the server")
        await h.press("escape")
        await h.idle(30)
        client = remote.client()
        runs = await client.runs.list(session)
        assert runs[0]["status"] == "interrupted"
        state = await client.threads.get_state(session)
        last = state["values"]["messages"][-1]
        assert last["type"] == "tool" and "cancelled" in str(last["content"])
    assert len(server.requests) == local_requests  # the local model was never asked
    # -r ID --server: the served session's transcript, painted from the server's thread.
    async with running_app(server, workspace, dcode_home, remote=remote, session_id=session) as h:
        await h.until(lambda: "Touched on the server." in h.text(), 30, "the served transcript")
        assert f"Resumed session {session} on {served.url}" in h.text()
        assert h.answers().count("Touched on the server.") == 1
