"""dcode's graph served, driven by ``langgraph_sdk``: one conformance suite run against each
server, ``langgraph dev`` (``dcode serve``) and Aegra with PostgreSQL and Redis (the ``served``
fixture; Aegra's skips with one reason where Python 3.12, Aegra, Redis or PostgreSQL is
missing). It covers a turn, an approval answered with ``Command(resume=...)``, a denial, a run
cancelled during a tool call, the token, detach and re-attach mid-answer, a restart between
turns, ``kill -9`` of Aegra's worker mid-run, a server that is down, and the dev server's
blocking-call detector."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import sqlite3
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from dcode.agent.async_tasks.remote import RemoteAgents, failure_line
from dcode.cli.app import main
from dcode.cli.serve import MISSING_EXTRA
from dcode.server.auth import REFUSED, WRONG
from dcode.server.options import AEGRA_CONFIG_FILE, ASSISTANT_ID, CONFIG_FILE, SESSION_ASSISTANT
from dcode.settings.database import DATABASE_URL_ENV
from dcode.settings.values import AsyncAgentConfig
from tests.support.langgraph_server import (
    ServedDcode,
    require_server_extra,
    serve_dcode,
    stop_group,
)
from tests.support.model_server import ScriptedModelServer, reply, tool_call

STREAM = ["messages-tuple", "custom", "updates"]


@dataclass
class Streamed:
    """What one run's stream carried."""

    events: list[dict[str, Any]] = field(default_factory=list)
    """dcode's events (the ``custom`` stream), as JSON."""
    text: str = ""
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    run_id: str = ""

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]


async def stream_run(served: ServedDcode, thread: str, **kwargs: Any) -> Streamed:
    out = Streamed()
    async for part in served.client().runs.stream(
        thread, served.assistant, stream_mode=STREAM, **kwargs
    ):
        if part.event == "metadata":
            out.run_id = part.data["run_id"]
        elif part.event == "custom":
            out.events.append(part.data)
        elif part.event == "messages":
            chunk = part.data[0]
            if chunk.get("type") == "AIMessageChunk" and isinstance(chunk.get("content"), str):
                out.text += chunk["content"]
        elif part.event == "updates" and "__interrupt__" in part.data:
            out.interrupts.extend(part.data["__interrupt__"])
        elif part.event == "error":
            raise RunFailed(part.data)
    return out


class RunFailed(AssertionError):
    """A run's stream ended with an error event (``data``: the server's words)."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(f"the run failed: {data}")
        self.data = data


async def failure_of(served: ServedDcode, thread: str, failed: RunFailed) -> str:
    """Why a run failed, as a client can tell: the stream's error says it on ``langgraph dev``;
    Aegra's says only ``<exception>: execution failed`` and keeps the message in the run's
    ``error_message``."""
    if served.kind == "aegra":
        (run,) = await served.client().runs.list(thread)
        return str(run.get("error_message", ""))
    return str(failed.data.get("message", ""))


async def new_thread(served: ServedDcode) -> str:
    return str((await served.client().threads.create())["thread_id"])


def turn(prompt: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": prompt}]}


async def test_a_turn_streams_the_answer_and_dcodes_events(served: ServedDcode) -> None:
    call = f"call_{uuid.uuid4().hex[:8]}"
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "echo served-output"}, call_id=call)]),
        reply("It printed served-output."),
    )
    thread = await new_thread(served)
    run = await stream_run(served, thread, input=turn("run echo"), context={"mode": "all"})
    assert run.text == "It printed served-output."
    tails = run.of_type("tool_output")  # the shell's live output, as dcode's typed JSON event
    assert tails
    assert {(e["call_id"], tuple(e["agent"])) for e in tails} == {(call, ())}
    assert "served-output" in tails[-1]["tail"]
    assert run.interrupts == []  # mode "all": nothing asked
    state = await served.client().threads.get_state(thread)
    assert state["values"]["messages"][-1]["content"] == "It printed served-output."
    assert served.blocking_calls() == []


async def test_a_new_run_starts_at_once_on_langgraph_dev(langgraph_server: ServedDcode) -> None:
    """The dev server's queue looks for runs every 0.5 s, and only for those made before it
    paused, so each run used to wait 0.5 to 1 s for a worker; woken by the new run, it starts
    it at once (``dcode.server.runtime_internals``). Unwoken, no run could take under 0.5 s,
    however idle the machine; the fastest of five is taken, so a busy machine does not fail it."""
    served = langgraph_server
    thread = await new_thread(served)
    waits = []
    for index in range(5):
        served.model.script(reply(f"Quick {index}."))
        started = time.monotonic()
        done = await served.client().runs.wait(
            thread, served.assistant, input=turn(f"quick {index}"), context={"mode": "all"}
        )
        waits.append(time.monotonic() - started)
        assert done["messages"][-1]["content"] == f"Quick {index}."
    assert min(waits) < 0.5, waits


async def test_a_shell_call_asks_once_and_runs_in_the_servers_workspace_when_approved(
    served: ServedDcode,
) -> None:
    call = f"call_{uuid.uuid4().hex[:8]}"
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": "pwd > where.txt"}, call_id=call)]),
        reply("Written."),
    )
    thread = await new_thread(served)
    asked = await stream_run(
        served, thread, input=turn("where are you?"), context={"mode": "manual"}
    )
    assert [e["call_id"] for e in asked.of_type("approval_requested")] == [call]
    assert len(asked.interrupts) == 1
    question = asked.interrupts[0]["value"]
    assert (question["type"], question["tool"], question["call_id"]) == (
        "approval_requested",
        "execute",
        call,
    )
    assert not (served.workspace / "where.txt").exists()  # nothing ran before the answer
    state = await served.client().threads.get_state(thread)
    assert state["interrupts"][0]["value"]["call_id"] == call

    resumed = await stream_run(
        served, thread, command={"resume": {"approved": True}}, context={"mode": "manual"}
    )
    assert resumed.of_type("approval_requested") == []  # the tool node ran again: not asked twice
    assert [(e["call_id"], e["approved"]) for e in resumed.of_type("approval_resolved")] == [
        (call, True)
    ]
    assert resumed.text == "Written."
    assert (served.workspace / "where.txt").read_text().strip() == str(served.workspace)
    assert served.blocking_calls() == []


async def test_a_denied_call_does_not_run_and_the_model_reads_why(
    served: ServedDcode,
) -> None:
    served.model.script(
        reply(tool_calls=[tool_call("write_file", {"file_path": "no.txt", "content": "x"})]),
        reply("Understood, I left it."),
    )
    first = len(served.model.requests)
    thread = await new_thread(served)
    asked = await stream_run(served, thread, input=turn("write no.txt"), context={"mode": "manual"})
    assert len(asked.interrupts) == 1
    denied = await stream_run(
        served,
        thread,
        command={"resume": {"approved": False, "feedback": "not that file"}},
        context={"mode": "manual"},
    )
    assert denied.text == "Understood, I left it."
    assert not (served.workspace / "no.txt").exists()
    tool_results = [text for role, text in served.model.transcript(first + 1) if role == "tool"]
    assert tool_results == ["denied: the user rejected this call and said: not that file"]


async def test_cancelling_a_run_during_a_tool_call_stops_the_command(
    served: ServedDcode,
) -> None:
    marker = served.workspace / f"sleeper-{uuid.uuid4().hex[:6]}.pid"
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": f"echo $$ > {marker.name}; sleep 60"})]),
    )
    client = served.client()
    thread = await new_thread(served)
    run = await client.runs.create(
        thread, served.assistant, input=turn("sleep"), context={"mode": "all"}
    )
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text().strip():
        assert time.monotonic() < deadline, "the command never started"
        await asyncio.sleep(0.1)
    pid = int(marker.read_text())
    started = time.monotonic()
    await client.runs.cancel(thread, run["run_id"], wait=True)
    cancelled_in = time.monotonic() - started
    assert (await client.runs.get(thread, run["run_id"]))["status"] == "interrupted"
    assert cancelled_in < 15
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, "the command outlived its cancelled run"
        await asyncio.sleep(0.1)
    assert served.blocking_calls() == []


async def test_sessions_run_at_the_same_time(served: ServedDcode) -> None:
    """One session's long command does not hold up another's turn: the server works on several
    runs at once (``langgraph dev``'s default is one job per worker, and ``dcode serve`` asks
    for 32; Aegra is started with 20, as the README's recipe says)."""
    marker = served.workspace / f"long-{uuid.uuid4().hex[:6]}.txt"
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": f"touch {marker.name}; sleep 8"})]),
    )
    client = served.client()
    first, second = await new_thread(served), await new_thread(served)
    long = await client.runs.create(
        first, served.assistant, input=turn("a long job"), context={"mode": "all"}
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline, "the long command never started"
        await asyncio.sleep(0.1)
    served.model.script(reply("The short answer."), reply("The long job is done."))
    short = await asyncio.wait_for(
        stream_run(served, second, input=turn("a short question"), context={"mode": "all"}), 30
    )
    assert short.text == "The short answer."
    # The other session's command still runs: this turn did not wait for it.
    assert (await client.runs.get(first, long["run_id"]))["status"] == "running"
    await client.runs.join(first, long["run_id"])
    state = await client.threads.get_state(first)
    assert state["values"]["messages"][-1]["content"] == "The long job is done."


async def test_dcode_serve_turns_off_telemetry_and_version_checks(
    langgraph_server: ServedDcode,
) -> None:
    """Nothing leaves the machine but the model's requests: the server is told so by its
    environment (``dcode serve`` becomes ``langgraph dev`` in place, with the same pid)."""
    environ = Path(f"/proc/{langgraph_server.process.pid}/environ").read_bytes().split(b"\0")
    assert {b"LANGGRAPH_CLI_NO_ANALYTICS=1", b"LANGGRAPH_NO_VERSION_CHECK=true"} <= set(environ)
    assert b"LANGSMITH_TRACING=false" in environ
    cmdline = Path(f"/proc/{langgraph_server.process.pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[cmdline.index(b"--n-jobs-per-worker") + 1] == b"32"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(("token", "message"), [(None, REFUSED), ("not-it", WRONG)])
async def test_a_missing_or_wrong_token_gets_one_clear_401(
    served: ServedDcode, token: str | None, message: str
) -> None:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await served.client(token=token).threads.create()
    assert refused.value.response.status_code == 401
    body = refused.value.response.json()  # langgraph dev: detail; Aegra: message
    assert (body.get("detail") or body.get("message")) == message


async def test_checkpoints_go_to_the_session_store(served: ServedDcode) -> None:
    """``dcode serve``: dcode's session store; Aegra: its own PostgreSQL (it brings its own
    checkpointer, and ``langgraph.json``'s does not apply there)."""
    served.model.script(reply("Stored."))
    thread = await new_thread(served)
    await stream_run(served, thread, input=turn("hello"), context={"mode": "edits"})
    assert checkpoint_count(served, thread) > 0


def checkpoint_count(served: ServedDcode, thread: str) -> int:
    if served.kind == "aegra":
        import psycopg

        with psycopg.connect(served.database_url) as db:
            row = db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread,))
            (count,) = row.fetchone() or (0,)
        return int(count)
    with sqlite3.connect(served.home / "sessions.db") as db:
        (count,) = db.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread,)
        ).fetchone()
    return int(count)


async def test_a_session_continues_after_the_server_restarts(served: ServedDcode) -> None:
    served.model.script(reply("First answer."), reply("Second answer."))
    first = len(served.model.requests)
    thread = await new_thread(served)
    await stream_run(served, thread, input=turn("one"), context={"mode": "edits"})
    served.restart()
    run = await stream_run(served, thread, input=turn("two"), context={"mode": "edits"})
    assert run.text == "Second answer."
    assert served.model.transcript(first + 1)[-3:] == [
        ("user", "one"),
        ("assistant", "First answer."),
        ("user", "two"),
    ]
    state = await served.client().threads.get_state(thread)
    assert [m["content"] for m in state["values"]["messages"]] == [
        "one",
        "First answer.",
        "two",
        "Second answer.",
    ]


async def test_a_run_whose_worker_was_killed_is_recovered_once(served: ServedDcode) -> None:
    """``kill -9`` of Aegra's server process mid-run: once it is back, the run is taken up from
    its last checkpoint (the tool call runs again; the model is not asked again) and finishes,
    with no message twice. ``langgraph dev`` keeps runs in memory: it has no such recovery."""
    if served.kind != "aegra":
        pytest.skip("only Aegra recovers a run whose worker died (langgraph dev: in memory)")
    marker = f"ran-{uuid.uuid4().hex[:6]}"
    command = f"if [ -e {marker} ]; then echo again; else touch {marker}; sleep 60; fi"
    served.model.script(
        reply(tool_calls=[tool_call("execute", {"command": command})]), reply("Recovered.")
    )
    first = len(served.model.requests)
    client = served.client()
    thread = await new_thread(served)
    run = await client.runs.create(
        thread, served.assistant, input=turn("work"), context={"mode": "all"}
    )
    deadline = time.monotonic() + 60
    while not (served.workspace / marker).exists():
        assert time.monotonic() < deadline, "the command never started"
        await asyncio.sleep(0.1)
    await asyncio.sleep(1)  # the model's tool call is checkpointed before the tool runs
    served.restart(kill=True)
    finished = await _finished(served, thread, run["run_id"], timeout=90)
    assert finished["status"] == "success"
    assert (
        len(served.model.requests) - first == 2
    )  # the tool call, then the answer: not asked again
    state = await client.threads.get_state(thread)
    messages = state["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    assert len({m["id"] for m in messages}) == len(messages)
    assert "again" in messages[2]["content"]
    assert messages[-1]["content"] == "Recovered."


async def _finished(served: ServedDcode, thread: str, run: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got = dict(await served.client().runs.get(thread, run))
        if got["status"] not in ("pending", "running"):
            return got
        assert time.monotonic() < deadline, f"the run is still {got['status']}"
        await asyncio.sleep(0.5)


async def test_a_client_that_detaches_mid_answer_rejoins_from_its_last_event(
    served: ServedDcode,
) -> None:
    """Detach after a few chunks of the answer, re-attach with ``Last-Event-ID``: the rest of
    the answer arrives, nothing lost and nothing twice."""
    answer = " ".join(f"word{n:02d}" for n in range(60))
    served.model.script(reply(answer, chunk_size=6, chunk_delay=0.03))
    client = served.client()
    thread = await new_thread(served)
    before, run_id, last_id = "", "", ""
    async for part in client.runs.stream(
        thread,
        served.assistant,
        input=turn("talk"),
        context={"mode": "edits"},
        stream_mode="messages-tuple",
        stream_resumable=True,
        on_disconnect="continue",
    ):
        if part.event == "metadata":
            run_id = part.data["run_id"]
        before += _chunk_text(part)
        last_id = part.id or last_id
        if len(before) > 40:
            break  # the client goes away mid-answer
    assert run_id and last_id and before
    after = ""
    async for part in client.runs.join_stream(
        thread, run_id, stream_mode="messages-tuple", last_event_id=last_id
    ):
        after += _chunk_text(part)
    assert before + after == answer


def _chunk_text(part: Any) -> str:
    if part.event != "messages" or not isinstance(part.data, list):
        return ""
    chunk = part.data[0]
    content = chunk.get("content") if chunk.get("type") == "AIMessageChunk" else None
    return content if isinstance(content, str) else ""


async def test_a_server_that_is_down_is_one_clear_line(served: ServedDcode) -> None:
    """What a dcode client (the async task tools' ``RemoteAgents``) says about a stopped server."""
    agent = AsyncAgentConfig("team", served.url, served.assistant, {"Authorization": "Bearer x"})
    stop_group(served.process)
    try:
        with pytest.raises(httpx.HTTPError) as down:
            await RemoteAgents([agent]).client("team").threads.create()
        line = failure_line(agent, down.value)
    finally:
        served.restart()
    assert (
        line
        == f"async agent 'team' at {served.url} is not reachable: All connection attempts failed"
    )


async def test_a_run_may_name_its_own_model(served: ServedDcode) -> None:
    served.model.script(reply("From the other model."), reply("From the default one."))
    first = len(served.model.requests)
    thread = await new_thread(served)
    other = {"model": "openai:other-model", "base_url": served.model.base_url, "api": "chat"}
    run = await stream_run(served, thread, input=turn("one"), context=other)
    assert run.text == "From the other model."
    run = await stream_run(served, thread, input=turn("two"), context={})
    assert run.text == "From the default one."
    assert [r.model for r in served.model.requests[first:]] == ["other-model", "test-model"]


async def test_a_run_for_another_workspace_is_refused(served: ServedDcode, tmp_path: Path) -> None:
    thread = await new_thread(served)
    with pytest.raises(RunFailed) as refused:
        await stream_run(served, thread, input=turn("hi"), context={"workspace": str(tmp_path)})
    assert (await failure_of(served, thread, refused.value)).startswith(
        f"this server works in {served.workspace}, not in {tmp_path}: "
    )


def test_aegras_config_serves_the_same_graphs_and_auth_as_langgraph_json() -> None:
    """Aegra loads a graph from a file's path (relative to its config), LangGraph from a
    module's: both name the same graphs (the session's, and the one a client asks about a
    session between its turns), and the same auth."""
    langgraph = json.loads(CONFIG_FILE.read_text())
    aegra = json.loads(AEGRA_CONFIG_FILE.read_text())
    assert aegra["auth"] == langgraph["auth"]
    assert set(aegra["graphs"]) == set(langgraph["graphs"]) == {ASSISTANT_ID, SESSION_ASSISTANT}
    for graph in (ASSISTANT_ID, SESSION_ASSISTANT):
        module, _, name = langgraph["graphs"][graph].partition(":")
        path, _, same_name = aegra["graphs"][graph].partition(":")
        assert same_name == name
        assert (AEGRA_CONFIG_FILE.parent / path).resolve() == Path(
            importlib.import_module(module).__file__ or ""
        )


def test_serve_off_loopback_needs_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--host", "0.0.0.0"])
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        "dcode: error: --token is required to listen on 0.0.0.0: any address but loopback needs one\n"
    )


def test_serve_without_the_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "langgraph_api", None)
    with pytest.raises(SystemExit) as done:
        main(["serve"])
    assert done.value.code == 2
    assert capsys.readouterr().err == f"dcode: error: {MISSING_EXTRA}\n"


@pytest.fixture
def no_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dcode serve`` must stop before it becomes the server (it would replace pytest)."""

    def refuse(*args: object) -> None:
        raise AssertionError("dcode serve started a server it should have refused")

    monkeypatch.setattr("dcode.cli.serve.exec_server", refuse)


@pytest.mark.usefixtures("no_exec")
def test_serve_without_a_key_for_its_model_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``langgraph dev`` printed its failed start-up's traceback (70 lines) and then hung."""
    require_server_extra()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SystemExit) as done:
        main(["serve", "-m", "openai:gpt-5.1"])
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        "dcode: error: the runs' model: no API key for openai: set OPENAI_API_KEY "
        "(export OPENAI_API_KEY=...)\n"
    )


@pytest.mark.usefixtures("no_exec")
def test_serve_on_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """``langgraph dev`` moved to another port, and clients reached whatever held this one."""
    require_server_extra()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        args = ["serve", "--port", str(port), "-m", "openai:m", "--base-url", "http://127.0.0.1:9"]
        with pytest.raises(SystemExit) as done:
            main(args)
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        f"dcode: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )


@pytest.mark.usefixtures("no_exec")
def test_serve_with_a_session_store_out_of_reach_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PostgreSQL store that is down: its one line (no password), before the server starts
    (its start-up ended in ~100 lines of log around that line)."""
    require_server_extra()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: refused
        url = f"postgresql://dcode:hunter2@127.0.0.1:{port}/sessions"
        monkeypatch.setenv(DATABASE_URL_ENV, url)
        args = ["serve", "-m", "openai:m", "--base-url", "http://127.0.0.1:9"]
        with pytest.raises(SystemExit) as done:
            main(args)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hunter2" not in err, err
    assert err.startswith(
        f"dcode: error: cannot use the session database postgresql://dcode@127.0.0.1:{port}/sessions:"
    )
    assert "Connection refused" in err


async def test_with_a_database_url_checkpoints_go_to_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    require_server_extra()
    import psycopg

    with (
        ScriptedModelServer() as model,
        serve_dcode(tmp_path, model, {DATABASE_URL_ENV: postgres_url}) as served,
    ):
        model.script(reply("Kept in PostgreSQL."))
        thread = await new_thread(served)
        run = await stream_run(served, thread, input=turn("hello"), context={"mode": "edits"})
        assert run.text == "Kept in PostgreSQL."
        assert served.blocking_calls() == []
    with psycopg.connect(postgres_url) as db:
        row = db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread,))
        (count,) = row.fetchone() or (0,)
    assert count > 0
