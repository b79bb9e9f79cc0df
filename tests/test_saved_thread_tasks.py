"""A saved thread's ``task`` calls replay their subagents' threads, as the live stream showed them."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import (
    AssistantMessageFinished,
    Event,
    SubagentFinished,
    SubagentStarted,
    ToolCallFinished,
    ToolCallRunning,
    ToolResult,
    ToolStatus,
)
from dcode.agent.saved_thread import replay, thread_reader
from dcode.agent.store.base import SessionStore
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import make_settings

PROMPT = "look at the code for me"
JOB = "List the files in the workspace and say how many there are."
DEEP = "Read a.txt and report its first word."


def task_call(description: str, call_id: str | None = None):
    return tool_call(
        "task", {"description": description, "subagent_type": "general-purpose"}, call_id=call_id
    )


def settled(events: list[Event]) -> list[tuple]:
    """What a replay can say of a turn: its complete messages and the subagents' ends, with
    the path of the agent each came from."""
    kept = []
    for e in events:
        match e:
            case AssistantMessageFinished(text=text):
                kept.append((e.agent, "answer", text))
            case ToolCallRunning(name=name, args=args):
                kept.append((e.agent, "call", name, args))
            case ToolCallFinished(name=name, result=ToolResult(status=status, text=output)):
                kept.append((e.agent, "result", name, status, output))
            case SubagentFinished(
                status=status, result=result, num_turns=turns, input_tokens=i, output_tokens=o
            ):
                kept.append((e.agent, "finished", status, result, turns, i, o))
    return kept


async def test_a_task_replays_its_subagent_thread_tagged_with_its_path(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, store: SessionStore
) -> None:
    (workspace / "a.txt").write_text("alpha beta\n")
    server.script(
        reply("Handing it over.", tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(tool_calls=[task_call(DEEP)], usage=(40, 4)).answering(JOB),
        reply(tool_calls=[tool_call("read_file", {"file_path": "a.txt"})], usage=(30, 3)).answering(
            DEEP
        ),
        reply("The first word is alpha.", usage=(35, 5)).answering(DEEP),
        reply("One file, a.txt, whose first word is alpha.", usage=(60, 6)).answering(JOB),
        reply("There is one file.").answering(PROMPT),
    )
    settings = make_settings(dcode_home, workspace, server, task_depth=2)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        live = [event async for event in runner.run_turn(PROMPT)]
    saved = store.read_thread(runner.session_id)
    assert saved is not None
    replayed = list(
        replay(
            saved.messages,
            thread_id=runner.session_id,
            read_thread=thread_reader(store),
        )
    )

    assert settled(replayed) == settled(live)
    started = [e for e in replayed if isinstance(e, SubagentStarted)]
    assert [(e.agent, e.description, e.thread_id) for e in started] == [
        (("task:1",), JOB, f"{runner.session_id}/task/1"),
        (("task:1", "task:1"), DEEP, f"{runner.session_id}/task/1/task/1"),
    ]
    # The subagent's description is its start, not a user message of the transcript.
    assert [e for e in replayed if e.type == "user_message"] == [replayed[0]] and replayed[
        0
    ].agent == ()
    # Live order: the subagent between the parent's call and its result.
    kinds = [
        (e.type, e.agent)
        for e in replayed
        if e.type
        in ("tool_call_running", "subagent_started", "subagent_finished", "tool_call_finished")
    ]
    assert kinds[0] == ("tool_call_running", ()) and kinds[1] == ("subagent_started", ("task:1",))
    assert kinds[-2:] == [("subagent_finished", ("task:1",)), ("tool_call_finished", ())]
    # Its figures hold its own subagent's, as the live ones do.
    [outer] = [e for e in replayed if isinstance(e, SubagentFinished) and e.agent == ("task:1",)]
    assert (outer.input_tokens, outer.output_tokens) == (40 + 30 + 35 + 60, 4 + 3 + 5 + 6)


def test_without_a_reader_a_task_replays_as_any_call() -> None:
    messages = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": "task", "args": {"description": JOB}, "id": "t1"}]),
        ToolMessage("two files", tool_call_id="t1", name="task"),
    ]
    events = list(replay(messages))
    assert (
        not [e for e in events if e.agent] and [e.type for e in events][-1] == "tool_call_finished"
    )
    # A reader that has no thread for the call: the same.
    assert [e.type for e in replay(messages, thread_id="s", read_thread=lambda _: None)] == [
        e.type for e in events
    ]


def test_a_task_killed_mid_run_replays_its_thread_and_ends_cancelled() -> None:
    parent = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": "task", "args": {"description": JOB}, "id": "t1"}]),
    ]
    threads = {
        "s/task/1": [
            HumanMessage(JOB),
            AIMessage("", tool_calls=[{"name": "ls", "args": {"path": "."}, "id": "c1"}]),
        ]
    }
    events = list(replay(parent, thread_id="s", read_thread=threads.get))
    tail = [
        (e.type, e.agent, e.result.status if isinstance(e, ToolCallFinished) else e.status)
        if isinstance(e, (ToolCallFinished, SubagentFinished))
        else (e.type, e.agent, None)
        for e in events[-4:]
    ]
    assert tail == [
        ("tool_call_running", ("task:1",), None),
        ("tool_call_finished", ("task:1",), ToolStatus.CANCELLED),
        ("subagent_finished", ("task:1",), ToolStatus.CANCELLED),
        ("tool_call_finished", (), ToolStatus.CANCELLED),
    ]
