"""Typed seams: the run's context is required and typed, and the compaction record is a typed,
checkpoint-safe value."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import get_args, get_origin

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

import dcode.agent.middleware as middleware_package
from dcode.agent.approval import HeadlessApprover
from dcode.agent.compaction.record import Compaction, read_compaction
from dcode.agent.engine import Engine
from dcode.agent.events import ErrorEvent
from dcode.agent.middleware.run_context_required import MissingRunContext
from dcode.agent.run_context import RunContext
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import make_settings


def dcode_middleware() -> list[type[AgentMiddleware]]:
    found = []
    for module_info in pkgutil.iter_modules(middleware_package.__path__):
        module = importlib.import_module(f"{middleware_package.__name__}.{module_info.name}")
        found += [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, AgentMiddleware)
            and cls.__module__ == module.__name__
            and cls.__dict__.get("state_schema", True)
        ]
    return found


def middleware_parameters(cls: type) -> tuple[object, object]:
    """The state and context types ``cls`` gives ``AgentMiddleware`` (through its bases)."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = get_origin(base)
            if origin is AgentMiddleware:
                state, context = get_args(base)[:2]
                return state, context
            if origin is not None and issubclass(origin, AgentMiddleware) and origin is not klass:
                # A generic base of ours (PromptSection[State, Value]): its first argument is the state.
                _inner_state, context = middleware_parameters(origin)
                return get_args(base)[0], context
    raise AssertionError(f"{cls.__name__} does not parametrize AgentMiddleware")


def test_every_middleware_is_typed_with_its_state_and_the_run_context() -> None:
    classes = dcode_middleware()
    assert len(classes) >= 9
    for cls in classes:
        state, context = middleware_parameters(cls)
        assert context is RunContext, cls.__name__
        if "state_schema" in cls.__dict__:
            assert state is cls.state_schema, cls.__name__


async def test_a_run_without_a_run_context_is_refused_before_anything_runs(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    # A write the model asks for at once: without the check, it ran with nobody asked.
    server.script(
        reply(tool_calls=[tool_call("write_file", {"file_path": "planted.txt", "content": "x"})]),
        reply("done"),
    )
    async with await Engine.open(make_settings(dcode_home, workspace, server)) as engine:
        runner = engine.runner(HeadlessApprover())
        with pytest.raises(MissingRunContext, match="RunContext"):
            await engine.graph.ainvoke({"messages": [HumanMessage(content="go")]}, runner.config)
    assert server.requests == [] and not (workspace / "planted.txt").exists()


def test_the_record_survives_even_the_strict_serializer() -> None:
    record = Compaction(cutoff=4, summary="S", archive="/h/s.md")
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    assert strict.loads_typed(strict.dumps_typed({"compaction": record})) == {"compaction": record}
    assert read_compaction({"compaction": record}) == record


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        {},
        {"cutoff": 2},
        {"cutoff": "2", "summary": "S"},
        {"cutoff": -1, "summary": "S"},
        {"cutoff": 2, "summary": "S", "archive": 3},
    ],
)
def test_what_is_not_a_compaction_reads_as_none(value: object) -> None:
    assert read_compaction({"compaction": value}) is None


async def test_a_compaction_round_trips_through_the_checkpoint_and_resumes(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    one = "one, at length. " * 60  # long enough that a summary makes the request smaller
    server.script(reply(one), reply("two"), reply("SUMMARY of one and two."), reply("three"))
    settings = make_settings(dcode_home, workspace, server)
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        for prompt in ("first", "second"):
            async for _ in runner.run_turn(prompt):
                pass
        await runner.compact()
        session_id = runner.session_id
    async with await Engine.open(settings) as engine:  # a new process, as far as the database knows
        runner = engine.runner(HeadlessApprover(), session_id=session_id)
        values = (await engine.graph.aget_state(runner.config)).values
        saved = values["compaction"]
        assert type(saved) is dict and {"cutoff", "summary", "archive"} <= set(saved) <= set(
            Compaction.__annotations__
        )
        assert (
            read_compaction(values) == saved
            and saved["summary"] == "SUMMARY of one and two."
            and saved["cutoff"] == 2
        )
        async for _ in runner.run_turn("third"):
            pass
    sent = server.transcript(3)
    assert "SUMMARY of one and two." in sent[1][1] and [text for _, text in sent[2:]] == [
        "second",
        "two",
        "third",
    ]


async def test_a_damaged_compaction_sends_the_whole_history(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    server.script(reply("one"), reply("two"))
    async with await Engine.open(make_settings(dcode_home, workspace, server)) as engine:
        runner = engine.runner(HeadlessApprover())
        async for _ in runner.run_turn("first"):
            pass
        await engine.graph.aupdate_state(
            runner.config, {"compaction": {"cutoff": 1}}, as_node="model"
        )
        events = [event async for event in runner.run_turn("second")]
        report = await engine.context_report(runner.session_id)  # /context reads it too
    assert not any(isinstance(event, ErrorEvent) for event in events)
    assert [text for role, text in server.transcript(1) if role != "system"] == [
        "first",
        "one",
        "second",
    ]
    assert not report.compacted


def test_a_graph_whose_compactor_counts_nothing_is_refused_when_it_is_built(tmp_path: Path) -> None:
    # Every tier counts with the compactor's counter: without one, the first overflow or
    # calibration would fail mid-turn; the graph is refused before any turn instead.
    from langchain_openai import ChatOpenAI

    from dcode.agent.backends import LocalBackend
    from dcode.agent.graph import build_graph
    from dcode.agent.middleware.summarization import Compactor
    from dcode.media.store import AttachmentStore
    from dcode.media.variants import VariantService
    from dcode.models.profiles import ModelProfile

    model = ChatOpenAI(model="test-model", api_key="test", base_url="http://127.0.0.1:9/v1")
    store = AttachmentStore(tmp_path / "attachments")
    with pytest.raises(ValueError, match="the compactor has no token counter"):
        build_graph(
            model,
            LocalBackend(tmp_path),
            checkpointer=None,
            profile=ModelProfile(),
            store=store,
            variants=VariantService(store),
            large_results=tmp_path / "results",
            compactor=Compactor(model, 100_000, tmp_path / "history"),
        )
