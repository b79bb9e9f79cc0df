"""The agent loop's before-agent and before-model work in one node each (``middleware.sequence``),
and the todo list's one-call rule without a node (``middleware.todos``): the graph's nodes and a turn's checkpoints are pinned (a new hook cannot add a checkpoint a
step unseen), and the shared nodes run their hooks as separate nodes would: in order, each over
the updates before it, stopping at the first jump, the messages merged as their channel merges
them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

import dcode.agent
from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import ToolCallFinished, TurnFinished
from dcode.agent.middleware.sequence import Hook, HookSequence, InSequence, sequence, sequenced
from dcode.agent.middleware.todos import PARALLEL_TODOS
from dcode.agent.middleware.turn_hooks import TurnHooksMiddleware
from dcode.agent.run_context import RunContext
from dcode.agent.store import open_store
from dcode.agent.tools.result import ToolStatus
from dcode.agent.tools.spec import LS, WRITE_TODOS
from dcode.models.factory import resolve_model
from tests.support.http_clients import closes_http_clients  # noqa: F401
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_model_server import make_llm

TURN = "TurnStart.before_agent"
STEP = "StepStart.before_model"
LANGCHAIN_HOOKS = ("before_agent", "before_model", "after_model", "after_agent")
NODES = {"__start__", TURN, STEP, "model", "tools", "__end__"}


def nodes(graph: Any) -> set[str]:
    return set(graph.get_graph().nodes)


async def test_the_session_graph_has_one_node_per_kind_of_hook(make_settings) -> None:
    async with await Engine.open(make_settings()) as engine:
        assert nodes(engine.graph) == NODES


async def test_the_served_graph_adds_only_the_stop_hook(make_settings) -> None:
    settings = make_settings()
    store = open_store(settings)
    checkpointer = await store.open_checkpointer()
    engine = Engine(settings, resolve_model(settings), store, checkpointer, turn_hooks=True)
    try:
        assert nodes(engine.graph) == {*NODES, "TurnHooksMiddleware.after_agent"}
    finally:
        await engine.close()


async def test_a_two_step_turn_makes_three_checkpoints_a_step(
    server: ScriptedModelServer, make_settings
) -> None:
    server.script(reply(tool_calls=[tool_call(LS.name, {"path": "."})]), reply("Two files."))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        events = [event async for event in runner.run_turn("what is here?")]
        assert isinstance(events[-1], TurnFinished)
        history = [state async for state in engine.graph.aget_state_history(runner.config)]
    ran = [state.next for state in reversed(history)]
    assert ran == [
        ("__start__",),
        (TURN,),
        (STEP,),
        ("model",),
        ("tools",),
        (STEP,),
        ("model",),
        (),
    ]


def dcode_classes() -> list[type[AgentMiddleware[Any, Any]]]:
    """Every middleware class dcode's agent package defines."""
    found: dict[str, type[AgentMiddleware[Any, Any]]] = {}
    for info in pkgutil.walk_packages(dcode.agent.__path__, f"{dcode.agent.__name__}."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, AgentMiddleware) and cls.__module__ == module.__name__:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


def langchain_hooks(cls: type) -> set[str]:
    return {
        hook
        for hook in LANGCHAIN_HOOKS
        if getattr(cls, hook) is not getattr(AgentMiddleware, hook)
        or getattr(cls, f"a{hook}") is not getattr(AgentMiddleware, f"a{hook}")
    }


def test_no_dcode_middleware_has_a_node_of_its_own() -> None:
    """A before-agent or before-model hook goes in ``start_turn``/``start_step``: LangChain
    makes a node (a checkpoint) for each class that overrides its own hooks."""
    classes = dcode_classes()
    assert len(classes) >= 20
    own = {cls.__name__: langchain_hooks(cls) for cls in classes if langchain_hooks(cls)}
    assert own == {"TurnHooksMiddleware": {"after_agent"}}  # once a turn, served graphs only


# The combinator's semantics, on hooks of the tests' own.


def runtime() -> Runtime[RunContext]:
    return Runtime(context=None)  # type: ignore[arg-type]  # these hooks read no context


def recording(
    name: str, calls: list[tuple[str, dict[str, Any]]], update: dict[str, Any] | None
) -> Hook:
    async def run(state: dict[str, Any], _runtime: Runtime[RunContext]) -> dict[str, Any] | None:
        calls.append((name, dict(state)))
        return update

    return Hook(name, run)


async def test_hooks_run_in_order_each_over_the_updates_before_it() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    node = sequence(
        "Steps",
        "before_model",
        [
            recording("a", calls, {"x": 1}),
            recording("b", calls, None),
            recording("c", calls, {"y": 2}),
        ],
    )
    update = await node.run_hooks({"messages": [], "x": 0, "z": 9}, runtime())
    assert [name for name, _ in calls] == ["a", "b", "c"]
    assert calls[0][1]["x"] == 0 and calls[1][1]["x"] == 1 and calls[2][1]["x"] == 1
    assert calls[2][1]["z"] == 9
    assert update == {"x": 1, "y": 2}


async def test_the_first_jump_ends_the_node_with_what_was_written() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    node = sequence(
        "Steps",
        "before_model",
        [
            recording("a", calls, {"x": 1}),
            recording("b", calls, {"y": 2, "jump_to": "end"}),
            recording("c", calls, {"z": 3}),
        ],
    )
    update = await node.run_hooks({"messages": []}, runtime())
    assert [name for name, _ in calls] == ["a", "b"]
    assert update == {"x": 1, "y": 2, "jump_to": "end"}


async def test_nothing_written_is_no_update() -> None:
    node = sequence("Steps", "before_model", [recording("a", [], None)])
    assert await node.run_hooks({"messages": []}, runtime()) is None


async def test_messages_merge_as_their_channel_does_and_all_are_returned() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    first = HumanMessage(content="first", id="1")
    second = HumanMessage(content="second", id="2")
    edited = HumanMessage(content="first, with context", id="1")
    node = sequence(
        "Turn",
        "before_agent",
        [
            recording("edit", calls, {"messages": [edited]}),
            recording("remove", calls, {"messages": RemoveMessage(id="2")}),
            recording("look", calls, None),
        ],
    )
    update = await node.run_hooks({"messages": [first, second]}, runtime())
    assert [m.content for m in calls[1][1]["messages"]] == ["first, with context", "second"]
    assert [m.content for m in calls[2][1]["messages"]] == ["first, with context"]
    assert update is not None and update["messages"] == [edited, RemoveMessage(id="2")]


async def test_two_hooks_writing_one_plain_key_are_refused() -> None:
    node = sequence(
        "Steps", "before_model", [recording("a", [], {"x": 1}), recording("b", [], {"x": 2})]
    )
    with pytest.raises(ValueError, match="'x'"):
        await node.run_hooks({"messages": []}, runtime())


async def test_a_hook_returning_something_else_than_a_dict_is_refused() -> None:
    node = sequence("Steps", "before_model", [recording("a", [], ["x"])])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a returned list"):
        await node.run_hooks({"messages": []}, runtime())


class Ending(InSequence[AgentState[object]]):
    """Ends the loop before the model when the last message says ``stop``."""

    step_jumps = ("end",)

    async def start_step(
        self, state: AgentState[object], runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        return {"jump_to": "end"} if state["messages"][-1].text == "stop" else None


class Starting(InSequence[AgentState[object]]):
    """A turn hook that changes nothing."""

    async def start_turn(
        self, state: AgentState[object], runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        return None


def agent(server: ScriptedModelServer, middleware: list[AgentMiddleware[Any, Any]]) -> Any:
    return create_agent(
        make_llm(server, False), [], middleware=sequenced(middleware), checkpointer=InMemorySaver()
    )


async def test_a_node_jumps_only_where_its_hooks_may(server: ScriptedModelServer) -> None:
    server.script(reply("hello"))
    graph = agent(server, [Starting(), Ending()])
    edges = {(e.source, e.target) for e in graph.get_graph().edges}
    assert (STEP, "__end__") in edges and (STEP, "model") in edges
    assert {target for source, target in edges if source == TURN} == {STEP}
    config = {"configurable": {"thread_id": "t"}}
    ended = await graph.ainvoke({"messages": [HumanMessage(content="stop")]}, config)
    assert server.requests == [] and not any(isinstance(m, AIMessage) for m in ended["messages"])
    answered = await graph.ainvoke({"messages": [HumanMessage(content="go")]}, config)
    assert answered["messages"][-1].text == "hello" and len(server.requests) == 1

    plain = agent(server, [Starting()])
    assert nodes(plain) == {"__start__", TURN, "model", "__end__"}
    assert {e.target for e in plain.get_graph().edges if e.source == TURN} == {"model"}


def test_only_the_hooks_a_middleware_has_are_sequenced() -> None:
    middleware = sequenced([TurnHooksMiddleware(), Starting(), Ending()])
    turn, step = middleware[0], middleware[1]
    assert isinstance(turn, HookSequence) and isinstance(step, HookSequence)
    assert [h.name for h in turn.hooks] == [
        "TurnHooksMiddleware.start_turn",
        "Starting.start_turn",
    ]
    assert [h.can_jump_to for h in turn.hooks] == [("end",), ()]
    assert [h.name for h in step.hooks] == ["Ending.start_step"]
    assert sequenced([]) == []


async def test_parallel_todo_writes_are_refused_and_the_model_asked_again(
    server: ScriptedModelServer, make_settings
) -> None:
    first = [{"content": "read", "status": "pending"}]
    second = [{"content": "write", "status": "pending"}]
    server.script(
        reply(
            tool_calls=[
                tool_call(WRITE_TODOS.name, {"todos": first}),
                tool_call(WRITE_TODOS.name, {"todos": second}),
            ]
        ),
        reply(tool_calls=[tool_call(WRITE_TODOS.name, {"todos": first + second})]),
        reply("planned"),
    )
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        events = [event async for event in runner.run_turn("plan it")]
        state = await engine.graph.aget_state(runner.config)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.result.status for e in finished] == [
        ToolStatus.ERROR,
        ToolStatus.ERROR,
        ToolStatus.OK,
    ]
    assert all(PARALLEL_TODOS in e.result.text for e in finished[:2])
    assert state.values["todos"] == first + second
    retried = server.requests[1].messages
    assert [m.get("content") for m in retried if m.get("role") == "tool"] == [PARALLEL_TODOS] * 2
