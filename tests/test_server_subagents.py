"""A subagent's question on a served run: the ``task`` call's subagent stops at a call that needs
approval, the session's run stops on it as an interrupt naming the subagent, and the client's
answer (``Command(resume={id: ...})``) lets the subagent go on from where it stopped, with no
model call made again and no command run twice. One subagent approved, one denied, two at once
answered one by one; on each server of the conformance suite (``served``), and through dcode's
own client (``RemoteRunner``, ``dcode -p --server``) on ``langgraph dev``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcode.agent.decisions import ApprovalDecision
from dcode.agent.events import (
    ApprovalRequested,
    Event,
    SubagentFinished,
    SubagentStarted,
    TurnFinished,
)
from dcode.agent.tools.result import ToolStatus
from dcode.server.client import RemoteServer
from dcode.server.remote import RemoteRunner
from dcode.settings.config import ApprovalMode
from tests.support.langgraph_server import ServedDcode, require_server_extra, serve_dcode
from tests.support.model_server import ScriptedModelServer, ToolCall, reply, tool_call
from tests.test_remote_sessions import dcode
from tests.test_server_graph import Streamed, new_thread, stream_run, turn
from tests.test_tui_app_support import running_app

MANUAL = {"mode": "manual"}


def task_call(job: str, call_id: str) -> ToolCall:
    return tool_call(
        "task", {"description": job, "subagent_type": "general-purpose"}, call_id=call_id
    )


def tag() -> str:
    return uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class ShellJob:
    """A prompt whose ``task`` call's subagent runs one shell command, which asks first. Its
    names carry the test's own ``tag``, so that tests can share one server."""

    prompt: str
    job: str
    marker: str
    """The workspace file the command appends ``ran`` to (or, scripted as denied, touches)."""
    call: str
    """The shell call's id."""


def script_shell_job(
    model: ScriptedModelServer, name: str, answer: str, *, denied: bool = False
) -> ShellJob:
    """Script its four replies: the session's ``task`` call, the subagent's shell call, the
    subagent's report (that it appended to ``marker``, or that the shell was denied), and the
    session's ``answer``."""
    t = tag()
    verb = "touch" if denied else "append"
    shell = ShellJob(f"delegate {t}", f"job {t}: {verb}", f"{name}-{t}.txt", f"call_sub_{t}")
    command = f"touch {shell.marker}" if denied else f"echo ran >> {shell.marker}"
    report = "the shell was denied" if denied else f"appended to {shell.marker}"
    model.script(
        reply(tool_calls=[task_call(shell.job, f"call_task_{t}")]).answering(shell.prompt),
        reply(
            tool_calls=[tool_call("execute", {"command": command}, call_id=shell.call)]
        ).answering(shell.job),
        reply(report).answering(shell.job),
        reply(answer).answering(shell.prompt),
    )
    return shell


async def ask(served: ServedDcode, prompt: str) -> tuple[str, Streamed]:
    """A new thread's first run of ``prompt``, in manual mode: it stops at the questions."""
    thread = await new_thread(served)
    return thread, await stream_run(served, thread, input=turn(prompt), context=MANUAL)


async def answer(
    served: ServedDcode, thread: str, question: dict[str, Any], **decision: Any
) -> Streamed:
    """Resume ``thread`` with the ``decision`` for one question (an interrupt), keyed by its id."""
    return await stream_run(
        served, thread, command={"resume": {question["id"]: decision}}, context=MANUAL
    )


def tool_results(served: ServedDcode, first: int, prompt: str) -> list[str]:
    """What the session's model read as tool results in its last request for ``prompt``."""
    requests = [r for r in served.model.requests[first:] if prompt in str(r.transcript())]
    return [text for role, text in requests[-1].transcript() if role == "tool"]


async def test_a_subagents_shell_call_asks_the_client_and_runs_once_when_approved(
    served: ServedDcode,
) -> None:
    shell = script_shell_job(served.model, "sub", "The subagent appended it.")
    prompt, marker, call = shell.prompt, shell.marker, shell.call
    first = len(served.model.requests)
    thread, asked = await ask(served, prompt)
    (question,) = asked.interrupts
    value = question["value"]
    assert (value["type"], value["tool"], value["call_id"], value["agent"]) == (
        "approval_requested",
        "execute",
        call,
        ["task:1"],
    )
    assert [(e["call_id"], e["agent"]) for e in asked.of_type("approval_requested")] == [
        (call, ["task:1"])
    ]
    assert len(asked.of_type("subagent_started")) == 1
    assert not (served.workspace / marker).exists()  # nothing ran before the answer
    assert len(served.model.requests) - first == 2  # the session's model, then the subagent's

    resumed = await answer(served, thread, question, approved=True)
    assert resumed.interrupts == []
    assert resumed.of_type("approval_requested") == []  # asked once
    assert resumed.of_type("subagent_started") == []  # it goes on; it does not start again
    assert [
        (e["call_id"], e["approved"], e["agent"]) for e in resumed.of_type("approval_resolved")
    ] == [(call, True, ["task:1"])]
    (finished,) = resumed.of_type("subagent_finished")
    assert (finished["status"], finished["result"]) == ("ok", f"appended to {marker}")
    assert finished["num_turns"] == 2  # the turn before the question counts too
    assert resumed.text == "The subagent appended it."
    assert (served.workspace / marker).read_text() == "ran\n"  # run once
    assert len(served.model.requests) - first == 4  # no model call made again
    assert tool_results(served, first, prompt) == [f"appended to {marker}"]
    assert served.blocking_calls() == []


async def test_a_subagents_call_denied_by_the_client_does_not_run(served: ServedDcode) -> None:
    shell = script_shell_job(served.model, "denied", "The subagent could not do it.", denied=True)
    prompt, job, marker = shell.prompt, shell.job, shell.marker
    first = len(served.model.requests)
    thread, asked = await ask(served, prompt)
    (question,) = asked.interrupts
    denied = await answer(served, thread, question, approved=False, feedback="not now")
    assert denied.text == "The subagent could not do it."
    assert not (served.workspace / marker).exists()
    job_requests = [r for r in served.model.requests[first:] if job in str(r.transcript())]
    assert [text for role, text in job_requests[-1].transcript() if role == "tool"] == [
        "denied: the user rejected this call and said: not now"
    ]
    assert tool_results(served, first, prompt) == ["the shell was denied"]
    assert len(served.model.requests) - first == 4


async def test_a_subagent_asking_twice_gets_each_answer_to_its_own_question(
    served: ServedDcode,
) -> None:
    """The second question's answer is not the first's: approved, then denied."""
    t = tag()
    prompt, job = f"delegate {t}", f"job {t}: two commands"
    allowed, refused = f"twice-a-{t}.txt", f"twice-b-{t}.txt"
    calls = f"call_a_{t}", f"call_b_{t}"
    served.model.script(
        reply(tool_calls=[task_call(job, f"call_task_{t}")]).answering(prompt),
        reply(
            tool_calls=[
                tool_call("execute", {"command": f"echo ran >> {allowed}"}, call_id=calls[0])
            ]
        ).answering(job),
        reply(
            tool_calls=[
                tool_call("execute", {"command": f"echo ran >> {refused}"}, call_id=calls[1])
            ]
        ).answering(job),
        reply("one ran, one was denied").answering(job),
        reply("Reported.").answering(prompt),
    )
    first = len(served.model.requests)
    thread, asked = await ask(served, prompt)
    (question,) = asked.interrupts
    assert question["value"]["call_id"] == calls[0]
    again = await answer(served, thread, question, approved=True)
    (second,) = again.interrupts
    assert (second["value"]["call_id"], second["value"]["agent"]) == (calls[1], ["task:1"])
    assert second["id"] != question["id"]
    assert (served.workspace / allowed).read_text() == "ran\n"
    done = await answer(served, thread, second, approved=False)
    assert done.text == "Reported."
    assert (served.workspace / allowed).read_text() == "ran\n"  # not run again
    assert not (served.workspace / refused).exists()
    assert [(e["call_id"], e["approved"]) for e in done.of_type("approval_resolved")] == [
        (calls[1], False)
    ]
    assert len(served.model.requests) - first == 5


async def test_two_subagents_asking_at_once_are_answered_one_by_one(served: ServedDcode) -> None:
    t = tag()
    prompt = f"delegate both {t}"
    jobs = {n: (f"job {n} {t}: append", f"par-{n}-{t}.txt", f"call_sub{n}_{t}") for n in (1, 2)}
    steps = [
        reply(
            tool_calls=[task_call(job, f"call_task{n}_{t}") for n, (job, _, _) in jobs.items()]
        ).answering(prompt)
    ]
    for job, marker, call in jobs.values():
        steps += [
            reply(
                tool_calls=[
                    tool_call("execute", {"command": f"echo ran >> {marker}"}, call_id=call)
                ]
            ).answering(job),
            reply(f"done with {marker}").answering(job),
        ]
    served.model.script(*steps, reply("Both subagents are done.").answering(prompt))
    first = len(served.model.requests)
    thread, asked = await ask(served, prompt)
    questions = {tuple(i["value"]["agent"]): i for i in asked.interrupts}
    assert sorted(questions) == [("task:1",), ("task:2",)]
    assert len({i["id"] for i in asked.interrupts}) == 2  # each its own interrupt
    assert {q["value"]["call_id"] for q in questions.values()} == {c for _, _, c in jobs.values()}

    # The first answer alone: the first subagent goes on, the second still waits.
    one = questions[("task:1",)]
    resumed = await answer(served, thread, one, approved=True)
    (still,) = resumed.interrupts
    assert (still["id"], still["value"]["agent"]) == (questions[("task:2",)]["id"], ["task:2"])
    assert (served.workspace / jobs[1][1]).read_text() == "ran\n"
    assert not (served.workspace / jobs[2][1]).exists()
    assert resumed.of_type("approval_requested") == []

    done = await answer(served, thread, still, approved=True)
    assert done.interrupts == []
    assert done.text == "Both subagents are done."
    for _, marker, _ in jobs.values():
        assert (served.workspace / marker).read_text() == "ran\n"  # each ran once
    assert len(served.model.requests) - first == 6  # no model call made again
    assert sorted(tool_results(served, first, prompt)) == [
        f"done with {jobs[1][1]}",
        f"done with {jobs[2][1]}",
    ]


class RecordingApprover:
    """A front end's approver that approves, keeping each question it was asked."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequested] = []

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision(True)


async def test_dcodes_client_shows_which_subagent_asks_and_answers_it(
    langgraph_server: ServedDcode,
) -> None:
    served = langgraph_server
    shell = script_shell_job(served.model, "client", "Done through the client.")
    prompt, marker, call = shell.prompt, shell.marker, shell.call
    approver = RecordingApprover()
    runner = RemoteRunner(
        RemoteServer(served.url, served.token), str(uuid.uuid4()), approver, ApprovalMode.MANUAL
    )
    events: list[Event] = [e async for e in runner.run_turn(prompt)]
    assert [(r.call_id, r.agent) for r in approver.asked] == [(call, ("task:1",))]
    shown = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [(e.call_id, e.agent) for e in shown] == [(call, ("task:1",))]  # drawn once
    assert [e.agent for e in events if isinstance(e, SubagentStarted)] == [("task:1",)]
    (finished,) = [e for e in events if isinstance(e, SubagentFinished)]
    assert (finished.status, finished.result) == (ToolStatus.OK, f"appended to {marker}")
    assert finished.num_turns == 2 and finished.input_tokens > 0
    last = events[-1]
    assert isinstance(last, TurnFinished) and last.result == "Done through the client."
    assert (served.workspace / marker).read_text() == "ran\n"


def test_dcode_p_with_approve_manual_answers_a_subagents_question(
    langgraph_server: ServedDcode, tmp_path: Path
) -> None:
    served = langgraph_server
    shell = script_shell_job(served.model, "headless", "The subagent was not allowed.", denied=True)
    prompt, job, marker = shell.prompt, shell.job, shell.marker
    first = len(served.model.requests)
    result = dcode(
        ["-p", prompt, "--server", served.url, "--approve", "manual"], tmp_path, token=served.token
    )
    assert (result.returncode, result.stdout) == (0, "The subagent was not allowed.\n"), (
        result.stderr
    )
    assert not (served.workspace / marker).exists()
    job_requests = [r for r in served.model.requests[first:] if job in str(r.transcript())]
    (denial,) = [text for role, text in job_requests[-1].transcript() if role == "tool"]
    assert "--approve all" in denial  # -p's own answer reached the subagent


async def test_the_tui_names_the_subagent_asking_on_a_server_and_y_answers_it(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    langgraph_server: ServedDcode,
) -> None:
    served = langgraph_server
    shell = script_shell_job(served.model, "tui", "The subagent appended it on the server.")
    prompt, marker = shell.prompt, shell.marker
    remote = RemoteServer(served.url, served.token)
    async with running_app(server, workspace, dcode_home, remote=remote) as h:
        await h.send(prompt)
        await h.approval(timeout=60)
        await h.until(
            lambda: "task:1 · general-purpose asks: allow this shell command?" in h.text(),
            30,
            "the question naming the subagent",
        )
        await h.press("y")
        await h.until(
            lambda: "The subagent appended it on the server." in h.answers(), 60, "the answer"
        )
        await h.idle(60)
    assert (served.workspace / marker).read_text() == "ran\n"
    assert not (workspace / marker).exists()


async def test_a_nested_subagents_question_reaches_the_client_through_both_task_calls(
    tmp_path: Path,
) -> None:
    """At depth two the grandchild's question stops its parent subagent's run, which stops the
    session's: each level goes on from its checkpoint with the answer."""
    require_server_extra()
    t = tag()
    prompt, job, inner, marker = f"delegate {t}", f"job {t}", f"inner job {t}", f"deep-{t}.txt"
    call = f"call_deep_{t}"
    with (
        ScriptedModelServer() as model,
        serve_dcode(tmp_path, model, config="task_depth = 2\n") as served,
    ):
        model.script(
            reply(tool_calls=[task_call(job, f"call_task_{t}")]).answering(prompt),
            reply(tool_calls=[task_call(inner, f"call_inner_{t}")]).answering(job),
            reply(
                tool_calls=[
                    tool_call("execute", {"command": f"echo ran >> {marker}"}, call_id=call)
                ]
            ).answering(inner),
            reply(f"appended to {marker}").answering(inner),
            reply("the inner agent appended it").answering(job),
            reply("Done at depth two.").answering(prompt),
        )
        thread, asked = await ask(served, prompt)
        (question,) = asked.interrupts
        assert (question["value"]["call_id"], question["value"]["agent"]) == (
            call,
            ["task:1", "task:1"],
        )
        assert not (served.workspace / marker).exists()
        done = await answer(served, thread, question, approved=True)
        assert done.interrupts == []
        assert done.text == "Done at depth two."
        assert (served.workspace / marker).read_text() == "ran\n"
        assert len(model.requests) == 6  # no model call made again
        assert [tuple(e["agent"]) for e in done.of_type("subagent_finished")] == [
            ("task:1", "task:1"),
            ("task:1",),
        ]
        assert served.blocking_calls() == []
