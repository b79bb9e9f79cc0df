"""The TUI with its sessions on a dcode server (``dcode --server URL``): the server's question
is the usual dialog, the answer resumes the run there, and Esc cancels the run on the server
(real app, each real server of the ``served`` fixture on loopback, the scripted models)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image
from textual import events

from dcode.agent.approval import HeadlessApprover
from dcode.media.store import AttachmentStore
from dcode.server.attached import AttachedRunner
from dcode.server.client import RemoteServer
from dcode.server.remote import RemoteRunner
from dcode.settings.config import ApprovalMode
from dcode.tui.setup_problem import find_setup_problem
from tests.support.langgraph_server import ServedDcode, require_server_extra, serve_dcode
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_media import sent_images
from tests.test_tui_app_support import make_settings, running_app


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
        # A rule kept on this machine would not hold on the server: none is offered.
        assert "in this project" not in h.text() and "everywhere" not in h.text()
        assert "for this session" in h.text()
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


async def test_an_attached_tui_needs_no_model_key_of_its_own(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    langgraph_server: ServedDcode,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A team member with no key for the hosted model their config names attaches to the
    team's server: the server's model answers, so the TUI opens and runs the turn there (it
    stopped at the first-run screen, "no API key for openai", and never reached the server)."""
    served = langgraph_server
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = make_settings(dcode_home, workspace, server, model="openai:gpt-5.1", base_url=None)
    assert "no API key for openai" in str(find_setup_problem(settings))  # local: asked for
    problem = find_setup_problem(settings, attached=True)  # as the launch asks, with --server
    assert problem is None
    served.model.script(reply("Answered by the server's model."))
    remote = RemoteServer(served.url, served.token)
    async with running_app(
        server, workspace, dcode_home, settings=settings, remote=remote, setup_problem=problem
    ) as h:
        await h.send("hello")
        await h.until(lambda: "Answered by the server's model." in h.text(), 60, "the answer")
        await h.idle(60)
        assert "can't reach a model" not in h.text()


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
    remote, thread = await detached_and_streaming(served, "stream slowly, then touch")
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


async def test_esc_cancels_a_joined_run_on_the_server(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    langgraph_server: ServedDcode,
) -> None:
    served = langgraph_server
    words = " ".join(f"slow{i}" for i in range(200))
    served.model.script(reply(words, chunk_size=4, chunk_delay=0.1))
    remote, thread = await detached_and_streaming(served, "a long answer")
    async with running_app(server, workspace, dcode_home, remote=remote, session_id=thread) as h:
        await h.until(lambda: "slow3 " in h.text(), 60, "the joined answer streaming")
        await h.press("escape")
        await h.idle(30)
        runs = await remote.client().runs.list(thread)
        assert runs[0]["status"] == "interrupted"
        state = await remote.client().threads.get_state(thread)
        last = state["values"]["messages"][-1]
        assert last["type"] == "ai" and str(last["content"]).startswith("slow0 slow1")
        assert len(str(last["content"])) < len(words)  # the partial answer, kept


async def detached_and_streaming(served: ServedDcode, prompt: str) -> tuple[RemoteServer, str]:
    """A run started on ``served`` with ``--detach``, once its answer streams: the client's
    server and the run's thread."""
    asked = len(served.model.requests)
    remote = RemoteServer(served.url, served.token)
    background = RemoteRunner(remote, str(uuid.uuid4()), HeadlessApprover(), ApprovalMode.EDITS)
    await background.start_background(prompt, prompt)
    await _until_streaming(served, remote, background.session_id, asked)
    return remote, background.session_id


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


VISION = {"image_inputs": True, "image_max_pixels": 640_000, "image_max_bytes": 1024 * 1024}
VISION_CONFIG = (
    '[models."openai:test-model"]\n'
    "image_inputs = true\nimage_max_pixels = 640000\nimage_max_bytes = 1048576\n"
)


async def test_an_image_pasted_into_an_attached_tui_reaches_the_servers_model(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, tmp_path: Path
) -> None:
    require_server_extra()
    shot = workspace / "shot.png"
    Image.new("RGB", (2048, 2048), (20, 120, 200)).save(shot)
    bad = workspace / "notes.png"
    bad.write_bytes(b"not an image at all")
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    (tmp_path / "vision").mkdir()
    with (
        ScriptedModelServer() as model,
        serve_dcode(tmp_path / "vision", model, config=VISION_CONFIG) as served,
    ):
        model.script(reply("A blue square."))
        remote = RemoteServer(served.url, served.token)
        async with running_app(
            server, workspace, dcode_home, settings=settings, remote=remote
        ) as h:
            await h.type("what is this? ")
            area = h.app.prompt_input.area
            area.post_message(events.Paste(str(bad)))  # not an image: one line, the draft stays
            await h.until(
                lambda: any("notes.png" in str(n.message) for n in h.app._notifications),
                10,
                "the refusal",
            )
            assert "what is this?" in h.app.prompt_input.text
            area.post_message(events.Paste(f"'{shot}'"))
            await h.until(lambda: "[image 1]" in h.app.prompt_input.text, 10, "the placeholder")
            await h.press("enter")
            await h.until(lambda: "A blue square." in h.text(), 60, "the served answer")
            await h.idle(60)
            runner = h.app.runner
            assert runner is not None
            thread = runner.session_id
        assert len(server.requests) == 0  # the local model was never asked
        images = sent_images(model.requests[0])
        assert len(images) == 1
        with Image.open(io.BytesIO(images[0])) as sent:
            assert sent.size == (800, 800)  # the server's request variant of the normalized image
        state = await remote.client().threads.get_state(thread)
        first = state["values"]["messages"][0]
        blocks = [b for b in first["content"] if b.get("type") == "image"]
        assert len(blocks) == 1 and blocks[0]["source_type"] == "dcode_attachment"
        assert "base64" not in json.dumps(first)  # the history holds the reference, no bytes
        kept = AttachmentStore(served.home / "attachments")
        data = kept.read_bytes(kept.get(str(blocks[0]["attachment_id"])))
        history = await remote.client().threads.get_history(thread)
        assert len(history) > 3
        assert base64.b64encode(data).decode()[:200] not in json.dumps(history)  # nor metadata
        carried = await remote.client().store.search_items(["dcode", "attachments"])
        assert carried["items"] == []  # taken out of the server's key-value store


PRICED_CONFIG = '[models."openai:test-model"]\ninput_price = 2.0\noutput_price = 8.0\n'
"""The server's tariff for its model: $2 and $8 a million tokens, in and out."""


async def test_an_attached_tui_names_the_servers_model_and_shows_its_spend(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, tmp_path: Path
) -> None:
    """The client's own model (gpt-5.1, priced $1.25 and $10) is neither named nor used to
    price the served session: the banner and the status bar name the server's model, the cost
    is what the server's store holds, priced with the server's tariff; ``/model`` and
    ``/effort`` switch what the server runs, once the server says it can."""
    require_server_extra()
    settings = make_settings(dcode_home, workspace, server, model="openai:gpt-5.1")
    (tmp_path / "priced").mkdir()
    with (
        ScriptedModelServer() as model,
        serve_dcode(tmp_path / "priced", model, config=PRICED_CONFIG) as served,
    ):
        model.script(reply("Priced on the server.", usage=(1000, 100)))
        remote = RemoteServer(served.url, served.token)
        async with running_app(
            server, workspace, dcode_home, settings=settings, remote=remote
        ) as h:
            status, welcome = h.app.status, h.app.welcome
            await h.until(lambda: status.model == "openai:test-model", 60, "the server's model")
            assert welcome.model == "openai:test-model"
            assert "gpt-5.1" not in h.text()
            # the banner's workspace is the server's, where the runs work, not the client's
            host = served.url.split("//", 1)[1].rstrip("/")
            assert welcome.workspace == f"{served.workspace} on {host}"
            # and so is the status bar's, without the client's directory or its git branch
            assert (status.cwd, status.branch) == (f"{served.workspace} on {host}", None)
            await h.send("spend")
            await h.until(lambda: "Priced on the server." in h.text(), 60, "the served answer")
            await h.idle(60)
            spent = (1000 * 2.0 + 100 * 8.0) / 1_000_000  # the server's tariff, not gpt-5.1's
            await h.until(lambda: status.cost == pytest.approx(spent), 30, "the server's cost")
            runner = h.app.runner
            assert isinstance(runner, AttachedRunner)
            rows, _ = await runner.remote.usage()
            assert [(r.model, r.cost_usd) for r in rows] == [
                ("openai:test-model", pytest.approx(spent))
            ]
            assert "$0.0028" in h.text()
            await h.send("/model nowhere:model")
            await h.until(lambda: "keeping openai:test-model" in h.text(), 30, "the refusal")
            assert status.model == "openai:test-model"
            await h.send("/model openai:other-model")
            await h.until(lambda: status.model == "openai:other-model", 60, "the switch")
            assert welcome.model == "openai:other-model"
            assert runner.remote.run_context()["model"] == "openai:other-model"
            assert f"switched to openai:other-model on {served.url}" in h.text()
            await h.send("/effort high")
            await h.until(lambda: status.model == "openai:other-model · high", 60, "the effort")
            assert runner.remote.run_context()["effort"] == "high"
            await h.send("/effort default")
            await h.until(lambda: status.model == "openai:other-model", 60, "the default")
            assert "effort" not in runner.remote.run_context()
            assert h.app.engine is not None
            assert h.app.engine.resolved.spec == "openai:gpt-5.1"  # the client's is untouched
            assert h.app.engine.resolved.profile.reasoning_effort != "high"
        # ``dcode -m … --server``: the client's model flags ask the server for that model.
        model.script(reply("From the model asked for."))
        flags = {"model": "openai:other-model", "base_url": model.base_url, "api": "chat"}
        async with running_app(
            server, workspace, dcode_home, settings=settings, remote=remote, served_context=flags
        ) as h:
            await h.until(lambda: h.app.status.model == "openai:other-model", 60, "its model")
            await h.send("which model?")
            await h.until(lambda: "From the model asked for." in h.text(), 60, "the answer")
            await h.idle(60)
        assert model.requests[-1].model == "other-model"
        assert len(server.requests) == 0  # the local model was never asked
