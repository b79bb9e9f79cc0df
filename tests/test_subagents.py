"""Subagents through the real loop: the ``task`` tool on the scripted server, real SQLite threads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import (
    ApprovalRequested,
    Event,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolStatus,
    TurnFinished,
    UsageUpdated,
)
from dcode.agent.store.base import SessionStore
from dcode.settings.config import ApprovalMode
from tests.support.model_server import reply, tool_call

PROMPT = "find where the config is loaded"
JOB = "Search the code for the function that loads the config; report its path."


def task_call(description: str, agent: str = "general-purpose", call_id: str | None = None):
    return tool_call("task", {"description": description, "subagent_type": agent}, call_id=call_id)


async def run(
    engine: Engine,
    prompt: str,
    approver=None,
    mode: ApprovalMode = ApprovalMode.EDITS,
    session_id: str | None = None,
):
    runner = engine.runner(approver or HeadlessApprover(), mode=mode, session_id=session_id)
    events = [event async for event in runner.run_turn(prompt)]
    return runner, events


def roles(server, index: int) -> list[str]:
    return [role for role, _ in server.transcript(index)]


async def test_a_subagent_starts_from_the_description_and_returns_only_its_answer(
    server, make_settings, workspace: Path, api: str
) -> None:
    (workspace / "config.py").write_text("def load_config():\n    return {}\n")
    server.script(
        reply("Delegating.", tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(
            tool_calls=[tool_call("grep", {"pattern": "def load_config", "path": "."})],
            usage=(100, 10),
        ).answering(JOB),
        reply("load_config is in config.py, line 1.", usage=(150, 12)).answering(JOB),
        reply("It is loaded by load_config in config.py.").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api)) as engine:
        runner, events = await run(engine, PROMPT)
        child = await engine.graph.aget_state(
            {"configurable": {"thread_id": f"{runner.session_id}/task/1"}}
        )
        parent = await engine.graph.aget_state(runner.config)
        info = engine.store.get(runner.session_id)
        report = await engine.context_report(runner.session_id)
    assert isinstance(events[-1], TurnFinished) and not events[-1].is_error
    assert events[-1].result == "It is loaded by load_config in config.py."

    # The subagent's first request: the system prompt and the description, nothing of the parent's.
    first_child = server.requests[1]
    assert [(r, t) for r, t in first_child.transcript() if r != "system"] == [("user", JOB)]
    assert PROMPT not in json.dumps(first_child.body) and "Delegating." not in json.dumps(
        first_child.body
    )
    assert "task" not in first_child.tool_names and "grep" in first_child.tool_names
    assert "task" in server.requests[0].tool_names

    # The parent's next request holds the answer only, not the subagent's calls.
    last = server.requests[3].transcript()
    assert ("tool", "load_config is in config.py, line 1.") in last
    assert not any(role == "tool_call" and text == "grep" for role, text in last)
    assert "def load_config" not in json.dumps(server.requests[3].body)

    # The subagent's run is a thread of its own, checkpointed.
    assert [m.type for m in child.values["messages"]] == ["human", "ai", "tool", "ai"]
    assert "todos" not in child.values or child.values["todos"] == []
    assert [m.type for m in parent.values["messages"]] == ["human", "ai", "tool", "ai"]

    # Events: the subagent's are tagged with its path, between its start and its end.
    tagged = [e for e in events if e.agent]
    assert tagged and all(e.agent == ("task:1",) for e in tagged)
    assert (
        isinstance(tagged[0], SubagentStarted)
        and tagged[0].thread_id == f"{runner.session_id}/task/1"
    )
    assert isinstance(tagged[-1], SubagentFinished) and tagged[-1].status is ToolStatus.OK
    assert tagged[-1].result == "load_config is in config.py, line 1."
    assert (
        tagged[-1].input_tokens == 250
        and tagged[-1].output_tokens == 22
        and tagged[-1].num_turns == 2
    )
    assert any(isinstance(e, ToolCallFinished) and e.name == "grep" for e in tagged)
    parent_text = "".join(e.text for e in events if isinstance(e, TextDelta) and not e.agent)
    assert "load_config is in config.py" not in parent_text.replace(
        "It is loaded by load_config in config.py.", ""
    )
    # Their usage counts in the session's figures.
    own = sum(e.input_tokens for e in events if isinstance(e, UsageUpdated) and not e.agent)
    assert events[-1].input_tokens == own + 250
    assert (info.input_tokens, info.subagent_input_tokens, info.subagent_output_tokens) == (
        own + 250,
        250,
        22,
    )
    assert report.spend is not None and report.spend.subagents is not None
    assert (report.spend.subagents.input_tokens, report.spend.subagents.output_tokens) == (250, 22)


async def test_stream_json_carries_the_agent_path(server, make_settings, api: str) -> None:
    from dcode.cli.headless import OutputFormat
    from tests.test_agent_e2e import headless

    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply("found it").answering(JOB),
        reply("done").answering(PROMPT),
    )
    code, out, err = await headless(make_settings(api), PROMPT, OutputFormat.STREAM_JSON)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert all("agent" in line for line in lines if line["type"] != "result")
    started = next(line for line in lines if line["type"] == "subagent_started")
    assert started["agent"] == ["task:1"] and started["agent_type"] == "general-purpose"
    assert next(line for line in lines if line["type"] == "turn_started")["agent"] == []


async def test_parallel_tasks_overlap_keep_their_order_and_respect_the_cap(
    server, make_settings, api: str
) -> None:
    jobs = [f"job number {n}: count the files" for n in range(1, 6)]
    server.script(
        reply(
            tool_calls=[task_call(job, call_id=f"call_{n}") for n, job in enumerate(jobs, 1)]
        ).answering(PROMPT),
        *[
            reply(f"answer {n}", chunk_size=2, chunk_delay=0.05).answering(job)
            for n, job in enumerate(jobs, 1)
        ],
        reply("all done").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api, task_concurrency=2)) as engine:
        _runner, events = await run(engine, PROMPT)
    assert not events[-1].is_error
    # The results come back in the calls' order, whatever order the subagents ended in.
    results = [text for role, text in server.transcript(len(server.requests) - 1) if role == "tool"]
    assert results == [f"answer {n}" for n in range(1, 6)]
    # Two at a time: never more than two subagents between their start and their end.
    assert len([e for e in events if isinstance(e, SubagentFinished)]) == 5
    running, peak = 0, 0
    for event in events:
        if isinstance(event, SubagentStarted):
            running += 1
            peak = max(peak, running)
        elif isinstance(event, SubagentFinished):
            running -= 1
    assert peak == 2


async def test_a_subagent_call_obeys_the_parent_approval_mode_headless(
    server, make_settings, workspace: Path, api: str
) -> None:
    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(tool_calls=[tool_call("execute", {"command": "touch ran.txt"})]).answering(JOB),
        reply("the shell was denied").answering(JOB),
        reply("done").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api)) as engine:
        _, events = await run(engine, PROMPT)
    assert not (workspace / "ran.txt").exists()
    denied = [text for role, text in server.transcript(2) if role == "tool"]
    assert denied == ["denied: the shell needs approval; rerun with --approve all"]
    asked = [e for e in events if isinstance(e, ApprovalRequested)]
    assert len(asked) == 1 and asked[0].agent == ("task:1",)


async def test_a_failing_subagent_ends_its_call_with_one_line(
    server, make_settings, api: str
) -> None:
    from tests.support.model_server import fault

    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        fault.status(400, message="bad request from the provider").answering(JOB),
        reply("the subagent failed").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api, max_retries=0)) as engine:
        _, events = await run(engine, PROMPT)
    assert isinstance(events[-1], TurnFinished) and not events[-1].is_error
    [finished] = [e for e in events if isinstance(e, SubagentFinished)]
    assert finished.status is ToolStatus.ERROR and finished.error
    result = [text for role, text in server.transcript(2) if role == "tool"]
    assert len(result) == 1 and result[0].startswith("task failed: ")


async def test_max_turns_caps_each_subagent(server, make_settings, api: str) -> None:
    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(tool_calls=[tool_call("ls", {"path": "."})]).answering(JOB).times(5),
        reply("the subagent was stopped").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api, max_turns=3)) as engine:
        _, events = await run(engine, PROMPT)
    [finished] = [e for e in events if isinstance(e, SubagentFinished)]
    assert finished.status is ToolStatus.ERROR and "--max-turns 3" in finished.error
    assert not events[-1].is_error


async def test_an_unknown_agent_is_an_error_result_naming_the_agents(
    server, make_settings, api: str
) -> None:
    server.script(
        reply(tool_calls=[task_call(JOB, agent="nobody")]).answering(PROMPT),
        reply("ok").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api)) as engine:
        _, events = await run(engine, PROMPT)
    [result] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert (
        result.result.status is ToolStatus.ERROR
        and "general-purpose" in result.result.text
        and "'nobody'" in result.result.text
    )
    assert len(server.requests) == 2


async def test_interrupting_a_subagent_leaves_both_threads_consistent(
    server, make_settings, api: str
) -> None:
    from dcode.agent.runner import dangling_tool_calls

    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(tool_calls=[tool_call("execute", {"command": "sleep 30"})]).answering(JOB),
        reply("never").answering(JOB),
        reply("resumed fine").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api, approve=ApprovalMode.ALL)) as engine:
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        events: list[Event] = []

        async def consume() -> None:
            async for event in runner.run_turn(PROMPT):
                events.append(event)
                if isinstance(event, ToolCallRunning) and event.name == "execute" and event.agent:
                    runner.cancel()

        await asyncio.wait_for(consume(), timeout=30)
        assert isinstance(events[-1], TurnFinished) and events[-1].interrupted
        child = await engine.graph.aget_state(
            {"configurable": {"thread_id": f"{runner.session_id}/task/1"}}
        )
        parent = await engine.graph.aget_state(runner.config)
        assert dangling_tool_calls(list(child.values["messages"])) == []
        assert dangling_tool_calls(list(parent.values["messages"])) == []
        # The session goes on: the next turn's request is valid (every call has its result).
        again = [event async for event in runner.run_turn("go on")]
    assert not again[-1].is_error and again[-1].result == "resumed fine"


PRIVATE_FIELDS = ("local_context", "local_context_cutoff", "compaction", "memory", "skills")


async def test_the_parent_private_state_never_reaches_a_subagent(
    server, make_settings, workspace: Path, api: str
) -> None:
    """The parent's private fields (and its todos) stay in the parent's thread: the subagent's
    state has none of them from the parent, and its requests carry none of their text."""
    (workspace / "AGENTS.md").write_text("Project memory: PARENT-MEMORY-MARK\n")
    server.script(
        reply("first").answering(PROMPT),
        # After the compaction below, the parent's requests start with its summary.
        reply(tool_calls=[task_call(JOB)]).answering("PARENT-SUMMARY-MARK"),
        reply("the child's answer").answering(JOB),
        reply("done").answering("PARENT-SUMMARY-MARK"),
    )
    async with await Engine.open(make_settings(api)) as engine:
        runner, _ = await run(engine, PROMPT)
        secret = {"cutoff": 1, "summary": "PARENT-SUMMARY-MARK", "archive": None}
        todos = [{"content": "PARENT-TODO-MARK", "status": "in_progress"}]
        await engine.graph.aupdate_state(
            runner.config, {"compaction": secret, "todos": todos}, as_node="model"
        )
        _, events = await run(engine, "go on", session_id=runner.session_id)
        parent = await engine.graph.aget_state(runner.config)
        child = await engine.graph.aget_state(
            {"configurable": {"thread_id": f"{runner.session_id}/task/1"}}
        )
    assert not events[-1].is_error
    assert parent.values["compaction"]["summary"] == "PARENT-SUMMARY-MARK"
    assert "compaction" not in child.values and not child.values.get("todos")
    child_requests = [r for r in server.requests if r.step is not None and r.step.when == JOB]
    assert child_requests
    for request in child_requests:
        body = json.dumps(request.body)
        assert (
            "PARENT-SUMMARY-MARK" not in body
            and "PARENT-TODO-MARK" not in body
            and PROMPT not in body
        )
        assert (
            "PARENT-MEMORY-MARK" in body
        )  # the project's memory is the subagent's too: it is the same project


def test_private_fields_stay_out_of_the_graph_schemas(tmp_path: Path) -> None:
    """The pitfall: a private field whose annotation cannot be resolved makes the whole schema
    be skipped, and its private fields leak into the graph's input and output. Each of dcode's
    private fields must be missing from both."""
    import typing

    from dcode.agent.middleware import local_context, memory, skills, summarization

    for schema in (
        local_context.LocalContextState,
        memory.MemoryState,
        skills.SkillsState,
        summarization.SummarizationState,
    ):
        typing.get_type_hints(
            schema, include_extras=True
        )  # raises when an annotation cannot resolve

    from langchain_openai import ChatOpenAI

    from dcode.agent.backends import LocalBackend
    from dcode.agent.compaction.summary import Compactor
    from dcode.agent.graph import build_graph
    from dcode.context.tokens.counter import TokenCounter
    from dcode.media.store import AttachmentStore
    from dcode.media.variants import VariantService
    from dcode.models.profiles import ModelProfile

    model = ChatOpenAI(model="test-model", api_key="test", base_url="http://127.0.0.1:9/v1")
    store = AttachmentStore(tmp_path / "attachments")
    graph = build_graph(
        model,
        LocalBackend(tmp_path),
        checkpointer=None,
        profile=ModelProfile(),
        store=store,
        variants=VariantService(store),
        large_results=tmp_path / "results",
        compactor=Compactor(
            model, 100_000, tmp_path / "history", counter=TokenCounter("test-model")
        ),
    )
    inputs = graph.get_input_jsonschema().get("properties", {})
    outputs = graph.get_output_jsonschema().get("properties", {})
    assert "messages" in inputs and "messages" in outputs
    for name in PRIVATE_FIELDS:
        assert name not in inputs and name not in outputs, name


async def test_at_depth_two_a_subagent_starts_its_own_and_the_paths_nest(
    server, make_settings, api: str
) -> None:
    inner = "Inner job: list the files."
    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(tool_calls=[task_call(inner)]).answering(JOB),
        reply("two files").answering(inner),
        reply("the inner agent found two files").answering(JOB),
        reply("done").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api, task_depth=2)) as engine:
        runner, events = await run(engine, PROMPT)
        nested = await engine.graph.aget_state(
            {"configurable": {"thread_id": f"{runner.session_id}/task/1/task/1"}}
        )
    assert not events[-1].is_error
    child, grandchild = (
        next(r for r in server.requests if r.step.when == text) for text in (JOB, inner)
    )
    assert "task" in child.tool_names and "task" not in grandchild.tool_names
    started = [e for e in events if isinstance(e, SubagentStarted)]
    assert [e.agent for e in started] == [("task:1",), ("task:1", "task:1")]
    assert [m.type for m in nested.values["messages"]] == ["human", "ai"]
    # The grandchild's tokens count once in the session's figures.
    usage = [e for e in events if isinstance(e, UsageUpdated)]
    assert events[-1].input_tokens == sum(e.input_tokens for e in usage)


async def test_a_subagent_compaction_writes_its_own_archive(
    server, make_settings, workspace: Path, dcode_home: Path, api: str
) -> None:
    """A subagent's whole run answers one request: its window may fill after it, and the
    summary then carries the request verbatim."""
    from dcode.settings.compaction_triggers import Threshold

    (workspace / "notes.txt").write_text(
        "".join(f"note {n}: something worth reading\n" for n in range(150))
    )
    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        *[
            reply(tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})]).answering(JOB)
            for _ in range(3)
        ],
        reply("SESSION INTENT: list. SUMMARY: listed three times.").answering(
            JOB
        ),  # the summarizer
        reply("listed").answering(JOB),
        reply("done").answering(PROMPT),
    )
    settings = make_settings(
        api, compact_at=Threshold.parse("6 messages"), compact_keep=Threshold.parse("2 messages")
    )
    async with await Engine.open(settings) as engine:
        runner, events = await run(engine, PROMPT)
    assert not events[-1].is_error
    archive = dcode_home / "conversation_history" / f"{runner.session_id}-task-1.md"
    assert archive.is_file() and "Summarized at" in archive.read_text()
    assert not (dcode_home / "conversation_history" / f"{runner.session_id}.md").exists()
    assert any(e.type == "compaction_finished" and e.agent == ("task:1",) for e in events)
    after = next(r for r in server.requests if r.step is not None and r.step.text == "listed")
    [(_, first)] = [(role, text) for role, text in after.transcript() if role == "user"]
    assert "listed three times" in first and first.endswith(JOB)


async def test_deleting_a_session_deletes_its_subagents_threads(
    server, make_settings, api: str, store: SessionStore
) -> None:
    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply("found").answering(JOB),
        reply("done").answering(PROMPT),
    )
    async with await Engine.open(make_settings(api)) as engine:
        runner, _ = await run(engine, PROMPT)
    child = f"{runner.session_id}/task/1"
    assert store.task_threads(runner.session_id) == [child]
    assert store.read_thread(child) is not None

    assert store.delete(runner.session_id)
    assert store.read_thread(runner.session_id) is None and store.read_thread(child) is None
    assert store.task_threads(runner.session_id) == []
