"""The before-agent and before-model work of many middleware, in one graph node each.

LangChain's ``create_agent`` makes a graph node for each middleware class that overrides a
hook, and every node is a superstep with a checkpoint of its own: with ``durability="sync"`` a
write before the next node starts (SQLite embedded, a PostgreSQL round trip on Aegra). Four
before-model nodes a step made seven nodes a step where three do. So dcode's middleware do not
override ``before_agent`` or ``before_model``: they subclass ``InSequence`` and put that work
in ``start_turn`` and ``start_step``, and ``sequenced`` runs them in two middleware of its own,
``TurnStart`` (once a turn) and ``StepStart`` (before each model call), in the order the
middleware are listed.

Within a node the hooks run as the separate nodes did: each sees the state with the updates
of the hooks before it laid over it; the first that returns a ``jump_to`` ends the node there
(the node may jump where any of its hooks may: ``can_jump_to`` is their union); the node
returns the updates merged. The ``messages`` channel has a reducer: a later hook sees the
messages as ``add_messages`` makes them (what the graph's channel does, ``history_channel``),
and the node returns every message written, in order (a fold over them is the fold over the
separate writes). Any other key is a plain channel, the last write kept: two hooks of one node
writing the same one is refused, since a reducer there would lose a write.
"""

# Any: hooks read and write untyped LangGraph state, as LangChain's own hooks do

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain.agents.middleware.types import JumpTo
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime

from dcode.agent.run_context import RunContext

StateT = TypeVar("StateT", bound=AgentState[object])
Update = dict[str, Any] | None
HookFn = Callable[[dict[str, Any], Runtime[RunContext]], Awaitable[Update]]
Kind = Literal["before_agent", "before_model"]

MESSAGES = "messages"
JUMP = "jump_to"


@dataclass(frozen=True)
class Hook:
    """One hook of a node: what it is called in errors, what it runs, where it may jump."""

    name: str
    run: HookFn
    can_jump_to: tuple[JumpTo, ...] = ()


class InSequence(AgentMiddleware[StateT, RunContext], Generic[StateT]):
    """A middleware whose before-agent and before-model work runs in the shared nodes: it
    overrides ``start_turn`` and ``start_step`` (never LangChain's ``before_*`` hooks, which
    would each add a node), and names where they may jump in ``turn_jumps``/``step_jumps``."""

    turn_jumps: ClassVar[tuple[JumpTo, ...]] = ()
    step_jumps: ClassVar[tuple[JumpTo, ...]] = ()

    async def start_turn(self, state: StateT, runtime: Runtime[RunContext]) -> Update:
        """Once a turn, before the first model call (LangChain's ``before_agent``)."""
        return None

    async def start_step(self, state: StateT, runtime: Runtime[RunContext]) -> Update:
        """Before each model call (LangChain's ``before_model``)."""
        return None


class HookSequence(AgentMiddleware[AgentState[object], RunContext]):
    """Runs ``hooks`` in order as one node (see the module's docstring). Made by ``sequence``,
    which gives each a class of its own: LangChain reads a hook's ``can_jump_to`` from the
    class, and names the node after it."""

    def __init__(self, hooks: Sequence[Hook]) -> None:
        super().__init__()
        self.hooks = tuple(hooks)

    async def run_hooks(self, state: Mapping[str, Any], runtime: Runtime[RunContext]) -> Update:
        view = dict(state)
        merged: dict[str, Any] = {}
        for hook in self.hooks:
            update = await hook.run(view, runtime)
            if update is None:
                continue
            if not isinstance(update, dict):
                raise TypeError(f"{hook.name} returned {type(update).__name__}, not a dict")
            for key, value in update.items():
                _merge(hook.name, merged, view, key, value)
            if update.get(JUMP):
                break
        return merged or None


def _merge(hook: str, merged: dict[str, Any], view: dict[str, Any], key: str, value: Any) -> None:
    """``hook``'s write of ``key`` added to the node's update and to the state later hooks see."""
    if key == MESSAGES:
        written = list(value) if isinstance(value, list | tuple) else [value]
        merged[key] = [*merged.get(key, []), *written]
        view[key] = add_messages(list(view.get(key, [])), written)
        return
    if key in merged:
        raise ValueError(
            f"{hook} writes {key!r}, which an earlier hook of the same node wrote: a hook's "
            "keys are plain channels, one write a node"
        )
    merged[key] = value
    view[key] = value


def sequence(name: str, kind: Kind, hooks: Sequence[Hook]) -> HookSequence:
    """One node named ``{name}.{kind}`` running ``hooks``, jumping where any of them may."""
    jumps = sorted({jump for hook in hooks for jump in hook.can_jump_to})

    async def run(
        self: HookSequence, state: AgentState[object], runtime: Runtime[RunContext]
    ) -> Update:
        return await self.run_hooks(state, runtime)

    method = hook_config(can_jump_to=jumps)(run) if jumps else run
    cls = type(name, (HookSequence,), {f"a{kind}": method, "__module__": __name__})
    instance: HookSequence = cls(hooks)
    return instance


def _overrides(middleware: AgentMiddleware[Any, Any], method: str) -> bool:
    return getattr(type(middleware), method) is not getattr(InSequence, method)


def sequenced(middleware: Sequence[AgentMiddleware[Any, Any]]) -> list[AgentMiddleware[Any, Any]]:
    """``middleware`` with ``TurnStart`` and ``StepStart`` in front, running the ``start_turn``
    and ``start_step`` of those that are ``InSequence``, in list order (a node only where
    there is a hook)."""
    staged = [m for m in middleware if isinstance(m, InSequence)]
    turn = [
        Hook(f"{m.name}.start_turn", m.start_turn, m.turn_jumps)
        for m in staged
        if _overrides(m, "start_turn")
    ]
    step = [
        Hook(f"{m.name}.start_step", m.start_step, m.step_jumps)
        for m in staged
        if _overrides(m, "start_step")
    ]
    return [
        *([sequence("TurnStart", "before_agent", turn)] if turn else []),
        *([sequence("StepStart", "before_model", step)] if step else []),
        *middleware,
    ]
