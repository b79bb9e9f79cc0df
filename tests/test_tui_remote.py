"""The TUI with its sessions on a dcode server (``dcode --server URL``): the server's question
is the usual dialog, the answer resumes the run there, and Esc cancels the run on the server
(real app, a real ``dcode serve`` on loopback, the scripted models)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from dcode.agent.approval import HeadlessApprover
from dcode.server.client import RemoteServer
from dcode.server.remote import RemoteRunner
from dcode.settings.config import ApprovalMode
from tests.support.langgraph_server import ServedDcode
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import running_app


async def test_a_served_session_asks_in_the_dialog_and_esc_cancels_on_the_server(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    langgraph_server: ServedDcode,
) -> None:
    served = langgraph_server
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


async def test_the_tui_joins_a_run_still_going_and_answers_its_question(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    langgraph_server: ServedDcode,
) -> None:
    served = langgraph_server
    words = " ".join(f"w{i}" for i in range(40))
    served.model.script(
        reply(
            words,
            tool_calls=[tool_call("execute", {"command": "touch joined.txt"})],
            chunk_size=3,
            chunk_delay=0.1,
        ),
        reply("Touched after the join."),
    )
    asked = len(served.model.requests)
    remote = RemoteServer(served.url, served.token)
    background = RemoteRunner(remote, str(uuid.uuid4()), HeadlessApprover(), ApprovalMode.EDITS)
    await background.start_background("stream slowly, then touch", "stream slowly, then touch")
    thread = background.session_id
    await _until_streaming(served, remote, thread, asked)
    async with running_app(server, workspace, dcode_home, remote=remote, session_id=thread) as h:
        await h.until(lambda: "joining its run" in h.text(), 30, "the join")
        await h.approval(timeout=60)  # asked in the joined run, answered here
        assert h.answers().count(words) == 1
        await h.press("y")
        await h.until(lambda: "Touched after the join." in h.text(), 60, "the resumed answer")
        await h.idle(60)
        assert (served.workspace / "joined.txt").exists()
        assert h.answers() == [words, "Touched after the join."]
        assert h.prompts() == ["stream slowly, then touch"]
        # The session goes on as usual once the joined run is over.
        served.model.script(reply("Next turn here."))
        await h.send("and now")
        await h.until(lambda: "Next turn here." in h.text(), 60, "the next turn")
        await h.idle(60)
        assert h.answers() == [words, "Touched after the join.", "Next turn here."]


async def _until_streaming(
    served: ServedDcode, remote: RemoteServer, thread: str, asked: int
) -> None:
    """Wait until the background run is running and its model was asked (``asked``: the
    model's requests before): its answer is then streaming."""
    client = remote.client()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = await client.runs.list(thread, status="running")
        if runs and len(served.model.requests) > asked:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the background run did not start")
