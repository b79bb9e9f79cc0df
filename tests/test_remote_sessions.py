"""Sessions run on a dcode server (``dcode --server URL``, ``dcode attach``): the remote
engine and the command line against each real server (the ``served`` fixture: ``dcode serve``'s
``langgraph dev`` on loopback, and Aegra with PostgreSQL and Redis where it is installed), with
the scripted model behind it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.budget import Limits
from dcode.agent.engine import Engine
from dcode.agent.events import (
    AssistantMessageFinished,
    Event,
    TextDelta,
    ToolArgsDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolOutputTail,
    TurnFinished,
)
from dcode.agent.tools.result import ToolStatus
from dcode.server.client import RemoteFailure, RemoteServer, served_model
from dcode.server.remote import RemoteRunner
from dcode.settings.config import ApprovalMode
from tests.support.langgraph_server import ServedDcode, free_port
from tests.support.model_server import ScriptedModelServer, Step, reply, tool_call
from tests.test_tui_app_support import make_settings

DCODE = str(Path(sys.executable).with_name("dcode"))


def remote(served: ServedDcode, mode: ApprovalMode = ApprovalMode.ALL) -> RemoteRunner:
    server = RemoteServer(served.url, served.token)
    return RemoteRunner(server, str(uuid.uuid4()), HeadlessApprover(), mode)


def dcode(
    args: list[str],
    tmp_path: Path,
    *,
    token: str | None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The ``dcode`` command, a client of the server: its own home, no model of its own;
    ``env``: more of its environment."""
    home = tmp_path / "client-home"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "client-key",
        **({"DCODE_SERVER_TOKEN": token} if token is not None else {}),
        **(env or {}),
    }
    return subprocess.run(
        [DCODE, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
    )


async def test_a_turn_gives_the_embedded_runners_events(served: ServedDcode) -> None:
    call = f"call_{uuid.uuid4().hex[:8]}"
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "echo hi"}, call_id=call)]),
        reply("It printed hi.", chunk_size=4),
    )
    events = [e async for e in remote(served).run_turn("run echo")]
    kinds = [e.type for e in events]
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
    running = [e for e in events if isinstance(e, ToolCallRunning)]
    assert [(e.call_id, e.name, e.args) for e in running] == [
        (call, "execute", {"command": "echo hi"})
    ]
    tails = [e for e in events if isinstance(e, ToolOutputTail)]
    assert tails and tails[-1].call_id == call and "hi" in tails[-1].tail
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.call_id, e.result.status) for e in finished] == [(call, ToolStatus.OK)]
    assert "hi" in finished[0].result.text
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text == "It printed hi."
    answers = [e.text for e in events if isinstance(e, AssistantMessageFinished)]
    assert answers == ["", "It printed hi."]
    done = events[-1]
    assert isinstance(done, TurnFinished)
    assert (done.result, done.num_turns, done.is_error) == ("It printed hi.", 2, False)
    assert done.input_tokens > 0


async def test_the_sessions_spend_is_read_and_its_end_fired_through_the_server(
    served: ServedDcode,
) -> None:
    """What ``/cost`` and ``/budget`` read in an attached TUI, and what its end asks: the
    server's own ``dcode-session`` graph answers, on each server."""
    served.model.script(reply("Spent a little.", usage=(70, 5)).answering("spend a little"))
    runner = remote(served)
    events = [e async for e in runner.run_turn("spend a little")]
    assert isinstance(events[-1], TurnFinished) and events[-1].result == "Spent a little."
    rows, limits = await runner.usage()
    assert [(r.model, r.agent, r.input_tokens, r.output_tokens) for r in rows] == [
        ("openai:test-model", "main", 70, 5)
    ]
    assert limits == Limits(None, None)  # neither the client nor the server set one
    assert await runner.end_session("other") == []  # no SessionEnd hook there: no event
    with pytest.raises(
        RemoteFailure, match="dcode-session answers usage, end, model, not 'nonsense'"
    ):
        await runner.ask_session("nonsense")


async def test_the_server_names_the_model_that_answers_a_clients_runs(served: ServedDcode) -> None:
    """What an attached TUI names in its banner and status bar: the server's own model, unless
    the client's runs ask for another (``-m``); a model the server cannot run is one line."""
    server = RemoteServer(served.url, served.token)
    own = await served_model(server, {})
    assert (own.spec, own.label) == ("openai:test-model", "openai:test-model")
    assert own.max_input_tokens  # its window, as the server's profile has it
    assert Path(own.workspace).resolve() == served.workspace.resolve()  # where its runs work
    asked = {"model": "openai:other-model", "base_url": served.model.base_url, "api": "chat"}
    other = await served_model(server, {**asked, "mode": "all", "budget_usd": "1.0"})
    assert other.spec == "openai:other-model"
    with_effort = await served_model(server, {"effort": "high"})
    assert with_effort.label == "openai:test-model · high"
    with pytest.raises(RemoteFailure, match="nowhere"):
        await served_model(server, {"model": "nowhere:model"})


def _shape(event: Event) -> tuple[object, ...]:
    """What an event says, leaving out what differs from one run to another (ids, the token
    figures of two different prompts, the time)."""
    match event:
        case TextDelta(text=text) | AssistantMessageFinished(text=text):
            return (event.type, text)
        case ToolCallStarted(name=name) | ToolCallRunning(name=name):
            return (event.type, name)
        case ToolArgsDelta(delta=delta):
            return (event.type, delta)
        case ToolCallFinished(name=name, result=result):
            return (event.type, name, result.status, result.text)
        case TurnFinished(result=result, num_turns=turns, interrupted=interrupted):
            return (event.type, result, turns, interrupted)
    return (event.type,)


async def test_the_same_turn_gives_the_same_events_served_and_embedded(
    served: ServedDcode,
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
) -> None:
    (workspace / "notes.txt").write_text("alpha\n")
    (served.workspace / "notes.txt").write_text("alpha\n")

    def steps() -> list[Step]:
        return [
            reply(
                "Reading.",
                tool_calls=[tool_call("read_file", {"file_path": "notes.txt"}, call_id="c1")],
                chunk_size=5,
            ),
            reply("It says alpha.", chunk_size=4),
        ]

    server.script(*steps())
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        embedded = [_shape(e) async for e in runner.run_turn("read notes.txt")]
    served.model.script(*steps())
    remote_events = [_shape(e) async for e in remote(served).run_turn("read notes.txt")]
    assert remote_events == embedded
    assert ("text_delta", "Readi") in remote_events
    assert ("tool_call_running", "read_file") in remote_events
    assert any(e[:3] == ("tool_call_finished", "read_file", ToolStatus.OK) for e in remote_events)
    assert remote_events[-1] == ("turn_finished", "It says alpha.", 2, False)


def test_dcode_p_runs_its_turn_on_the_server(served: ServedDcode, tmp_path: Path) -> None:
    served.model.script(reply("Served answer."), reply("Second served answer."))
    result = dcode(
        ["-p", "hello", "--server", served.url, "--output-format", "json"],
        tmp_path,
        token=served.token,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["result"] == "Served answer." and answer["is_error"] is False
    thread = answer["session_id"]
    assert served.model.requests[-1].transcript()[-1] == ("user", "hello")
    # -r ID continues the server's session: the model reads the first turn too.
    result = dcode(
        ["-p", "again", "--server", served.url, "-r", thread], tmp_path, token=served.token
    )
    assert (result.returncode, result.stdout) == (0, "Second served answer.\n"), result.stderr
    pairs = served.model.requests[-1].transcript()
    assert ("user", "hello") in pairs and ("assistant", "Served answer.") in pairs
    assert pairs[-1] == ("user", "again")


def test_the_clients_approve_mode_answers_the_servers_questions(
    served: ServedDcode, tmp_path: Path
) -> None:
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "touch denied.txt"})]),
        reply("I could not run it."),
        reply(tool_calls=[tool_call("execute", {"command": "touch allowed.txt"})]),
        reply("Done."),
    )
    # -p's default mode, edits: the shell call is asked, and -p's approver denies it.
    result = dcode(
        ["-p", "touch it", "--server", served.url, "--output-format", "json"],
        tmp_path,
        token=served.token,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["result"] == "I could not run it."
    assert not (served.workspace / "denied.txt").exists()
    denial = served.model.requests[-1].transcript()[-1]
    assert denial[0] == "tool" and "--approve all" in denial[1]
    # The result lists the denial as an embedded run's does (it said [] for a served run).
    assert [(d["tool_name"], d["tool_input"]) for d in answer["permission_denials"]] == [
        ("execute", {"command": "touch denied.txt"})
    ]
    assert "--approve all" in answer["permission_denials"][0]["reason"]
    # DCODE_SERVER names the server as --server does.
    result = dcode(
        ["-p", "touch it", "--approve", "all"],
        tmp_path,
        token=served.token,
        env={"DCODE_SERVER": served.url},
    )
    assert (result.returncode, result.stdout) == (0, "Done.\n"), result.stderr
    assert (served.workspace / "allowed.txt").exists()


def test_a_wrong_token_and_a_server_that_is_down_are_one_line(
    served: ServedDcode, tmp_path: Path
) -> None:
    wrong = dcode(["-p", "hi", "--server", served.url], tmp_path, token="not-the-token")
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr.count("\n") == 1, wrong.stderr
    assert wrong.stderr.startswith(f"dcode: error: the dcode server at {served.url} refused")
    assert "DCODE_SERVER_TOKEN" in wrong.stderr
    down = f"http://127.0.0.1:{free_port()}"
    for args in (
        ["-p", "hi", "--server", down],
        ["sessions", "list", "--server", down],
        ["attach", "--server", down],
    ):
        result = dcode(args, tmp_path, token=served.token)
        assert result.returncode == 1 and result.stdout == "", result
        assert result.stderr == (
            f"dcode: error: cannot reach the dcode server at {down}: is `dcode serve` running there?\n"
        )


async def test_cancel_during_a_tool_call_cancels_the_run_on_the_server(
    served: ServedDcode,
) -> None:
    call = f"call_{uuid.uuid4().hex[:8]}"
    served.model.script(
        reply(
            tool_calls=[tool_call("execute", {"command": "echo started; sleep 60"}, call_id=call)]
        ),
        reply("After the interrupt."),
    )
    runner = remote(served)
    events: list[Event] = []
    started = 0.0
    async for event in runner.run_turn("sleep"):
        events.append(event)
        if isinstance(event, ToolOutputTail) and not started:
            started = time.monotonic()
            assert runner.cancel()
    done = events[-1]
    assert isinstance(done, TurnFinished) and done.interrupted and not done.is_error
    assert time.monotonic() - started < 15
    client = runner.server.client()
    runs = await client.runs.list(runner.session_id)
    assert {r["status"] for r in runs} <= {"interrupted", "success"}
    messages = await runner.messages()
    assert messages[-1].type == "tool" and "cancelled" in str(messages[-1].content)
    # The session goes on: the next turn runs with the cancelled call answered.
    after = [e async for e in runner.run_turn("go on")]
    assert isinstance(after[-1], TurnFinished) and after[-1].result == "After the interrupt."


def test_sessions_list_shows_the_servers_threads(served: ServedDcode, tmp_path: Path) -> None:
    served.model.script(reply("Listed."))
    marker = f"list me {uuid.uuid4().hex[:6]}"
    result = dcode(
        ["-p", marker, "--server", served.url, "--output-format", "json"],
        tmp_path,
        token=served.token,
    )
    assert result.returncode == 0, result.stderr
    thread = json.loads(result.stdout)["session_id"]
    listed = dcode(["sessions", "list", "--server", served.url], tmp_path, token=served.token)
    assert listed.returncode == 0, listed.stderr
    header, first, *_ = listed.stdout.splitlines()
    assert header.split()[:3] == ["ID", "STATUS", "UPDATED"]
    assert first.startswith(thread) and first.endswith(marker) and " idle " in first


def test_detach_then_attach_mid_answer_shows_everything_once(
    served: ServedDcode, tmp_path: Path
) -> None:
    call = f"call_{uuid.uuid4().hex[:8]}"
    words = " ".join(f"w{i}" for i in range(60))
    served.model.script(
        reply(
            "Looking first.",
            tool_calls=[tool_call("execute", {"command": "echo detached-tool"}, call_id=call)],
        ),
        reply(words, chunk_size=3, chunk_delay=0.1),
    )
    started = dcode(
        ["-p", "work in the background", "--server", served.url, "--detach", "--approve", "all"],
        tmp_path,
        token=served.token,
    )
    assert started.returncode == 0, started.stderr
    thread = started.stdout.strip()
    assert uuid.UUID(thread)
    asyncio.run(_until_tool_result(served, thread))
    attached = dcode(["attach", thread, "--server", served.url], tmp_path, token=served.token)
    assert attached.returncode == 0, attached.stderr
    lines = attached.stdout.splitlines()
    assert lines.count("[you] work in the background") == 1
    assert lines.count("[dcode] Looking first.") == 1
    assert sum(line.startswith("→ execute(") for line in lines) == 1
    assert sum("detached-tool" in line and line.startswith("[tool]") for line in lines) == 1
    assert lines.count(f"[dcode] {words}") == 1
    assert lines.index("[dcode] Looking first.") < lines.index(f"[dcode] {words}")
    # Attaching again once it is over: the same transcript, from the history alone; without an
    # id, `dcode attach` follows the server's newest session, this one.
    again = dcode(["attach"], tmp_path, token=served.token, env={"DCODE_SERVER": served.url})
    assert again.stdout.splitlines() == lines, again.stderr


async def _until_tool_result(served: ServedDcode, thread: str) -> None:
    """Wait until the background run's tool has run: its answer is then streaming."""
    client = served.client()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = await client.threads.get_state(thread)
        messages: list[dict[str, Any]] = (state.get("values") or {}).get("messages") or []
        if any(m.get("type") == "tool" for m in messages):
            runs = await client.runs.list(thread)
            assert runs[0]["status"] == "running", "the answer was over before the attach"
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the background run's tool did not run")


def test_the_tui_resumes_the_servers_threads_by_id_or_the_newest(
    served: ServedDcode, tmp_path: Path
) -> None:
    from dcode.cli.run_request import HeadlessRequest
    from dcode.settings.config import ConfigError
    from dcode.tui.launch import served_session

    served.model.script(reply("Newest."))
    result = dcode(
        ["-p", "newest", "--server", served.url, "--output-format", "json"],
        tmp_path,
        token=served.token,
    )
    assert result.returncode == 0, result.stderr
    thread = json.loads(result.stdout)["session_id"]
    remote_server = RemoteServer(served.url, served.token)
    assert served_session(remote_server, HeadlessRequest("", resume_latest=True)) == thread
    assert served_session(remote_server, HeadlessRequest("", resume_id=thread)) == thread
    assert served_session(remote_server, HeadlessRequest("")) is None
    missing = str(uuid.uuid4())
    try:
        served_session(remote_server, HeadlessRequest("", resume_id=missing))
    except ConfigError as exc:
        line = str(exc)
    else:
        raise AssertionError("a thread that is not there was resumed")
    assert line.startswith(f"the dcode server at {served.url} has no such thread or run")
    assert "\n" not in line


def test_a_question_left_waiting_is_answered_by_the_next_client(
    served: ServedDcode, tmp_path: Path
) -> None:
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "touch waited.txt"})]),
        reply("It was not run."),
        reply("Going on."),
    )
    started = dcode(
        ["-p", "touch waited.txt", "--server", served.url, "--detach"],
        tmp_path,
        token=served.token,
    )
    assert started.returncode == 0, started.stderr
    thread = started.stdout.strip()
    asyncio.run(_until_idle(served, thread))
    attached = dcode(["attach", thread, "--server", served.url], tmp_path, token=served.token)
    assert attached.returncode == 0, attached.stderr
    assert attached.stdout.splitlines()[-1] == (
        f"[waiting] approval of execute touch waited.txt: "
        f"answer it with dcode -r {thread} --server {served.url}"
    )
    # -r ID: -p's approver answers the question (no), the stopped run ends, then the prompt.
    going = dcode(
        ["-p", "go on", "--server", served.url, "-r", thread], tmp_path, token=served.token
    )
    assert (going.returncode, going.stdout) == (0, "Going on.\n"), going.stderr
    assert not (served.workspace / "waited.txt").exists()
    pairs = served.model.requests[-1].transcript()
    assert ("assistant", "It was not run.") in pairs and pairs[-1] == ("user", "go on")


async def _until_idle(served: ServedDcode, thread: str) -> None:
    client = served.client()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = await client.runs.list(thread)
        if runs and runs[0]["status"] not in ("pending", "running"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the background run did not stop")
