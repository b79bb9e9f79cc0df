"""Running a ``task`` call's subagent: a full agent loop in a thread of its own.

Isolation. The subagent's thread (``SESSION/task/N``) starts from one user message, the job's
description; none of the parent's messages, todos or private fields go with it, and only its
final answer comes back. Its graph runs in a fresh ``contextvars.Context``: otherwise LangGraph
would take the run for a subgraph of the parent's (inheriting its stream, its callbacks and
its checkpoint namespace), and the subagent's tokens would stream into the parent's answer.

Events. The subagent's stream goes through the live stream's own translator, and each event
goes out on the parent's stream tagged with the subagent's path (``("task:2",)``), between a
``SubagentStarted`` and a ``SubagentFinished``; events a deeper subagent tagged keep their path.

Limits. At most ``concurrency`` subagents run at once in the process; the others wait for a
slot. Each runs under the session's approval mode, or its agent's own when that is stricter,
and ``--max-turns`` caps each one; its requests count in the session's budget, and a
subagent at the cap ends its call with the budget's line (the parent stops before its own next
request). A failure ends the call with an error result the parent's
model can read; an interrupt cancels the subagent with its parent (the runner then answers the
calls it left open, in both threads).

Questions as interrupts. Where the approver asks through LangGraph's ``interrupt()`` (a served
run), the subagent's run stops at its question, saved in its thread. The ``task`` call then asks
it again in the parent's run, as its own interrupt (its value: the subagent's question, which
names the agent), so the parent's client sees and answers it. When the parent's node runs again
with the answer, the subagent goes on from its checkpoint with it: no model call or tool runs
twice. Several subagents at once each stop on their own question, and so each ``task`` call on
its own interrupt.
"""

# Any: create_agent's compiled graph, which LangGraph types over AgentState[Any]

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Coroutine
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command, Interrupt, interrupt

from dcode.agent.approval import ScopedPolicy
from dcode.agent.budget import BudgetReached
from dcode.agent.events import Event, Notice, SubagentFinished, SubagentStarted, ToolStatus
from dcode.agent.hooks.outcome import stopped_line
from dcode.agent.markers import HOOK_MARKER
from dcode.agent.run_context import RECURSION_LIMIT, RunContext
from dcode.agent.stream import STREAM_MODES, StreamTranslator, TurnTally
from dcode.agent.subagents.definitions import AgentCatalog, AgentDefinition
from dcode.agent.subagents.threads import task_path, task_thread
from dcode.media.attachment import SOURCE_TYPE
from dcode.models.errors import describe_model_error

MAX_DEPTH = 2
MAX_IMAGES = 4
"""Image references a subagent's result carries at most (the newest); the rest are named."""

GraphFor = Callable[[AgentDefinition, bool], Any]
"""The compiled graph for an agent; the flag says whether it may start subagents itself."""
Writer = Callable[[Event], None]
ANSWERS_KEY = "dcode_answers"
"""In a subagent's checkpoints' metadata: how many answers of its ``task`` call's parent run it
has been given (``ParentQuestions`` reads past them when the parent's node runs again)."""
CALL_KEY = "dcode_task_call"
"""In a subagent's checkpoints' metadata: the ``task`` call it runs for (only that call answers
the questions it stopped on)."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """One ``task`` call, as the tool received it."""

    agent_type: str
    description: str
    number: int
    """Which ``task`` call of the parent's thread this is, from 1."""
    call_id: str
    parent: RunContext
    parent_thread: str
    writer: Writer
    """Puts an event on the parent's stream."""


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What the ``task`` call returns: the subagent's answer (text, then image references),
    or one line saying why there is none."""

    content: str | list[dict[str, object]]
    is_error: bool


@dataclass(frozen=True, slots=True)
class Stopped:
    """Where a subagent's thread stands after a run: the questions it stopped on (none: it
    ended, or never ran), how many of its parent's answers it has had, and its messages."""

    pending: tuple[Interrupt, ...] = ()
    answered: int = 0
    messages: list[BaseMessage] = field(default_factory=list)
    call_id: str = ""
    """The ``task`` call its last run was for."""


class ParentQuestions:
    """The interrupts one run of a ``task`` call's node makes in the parent's run.

    LangGraph gives a node its answers by position: when the node runs again, its k-th
    ``interrupt()`` returns the k-th answer, and the first one without an answer stops the run
    with its question. The subagent goes on from its checkpoint rather than from the start, so
    the answers it already had (``Stopped.answered``) are read past first, and each question it
    waits on now gets the answer given to it.
    """

    def __init__(self) -> None:
        self.made = 0

    def answers(self, stopped: Stopped) -> dict[str, object]:
        """The answers to the subagent's questions, by its interrupts' ids; raises LangGraph's
        interrupt (the parent's run stops) for the first one not answered yet."""
        while self.made < stopped.answered:
            self._ask(stopped.pending[0].value)
        return {question.id: self._ask(question.value) for question in stopped.pending}

    def _ask(self, value: object) -> object:
        answer = interrupt(value)
        self.made += 1
        return answer


class Subagents:
    def __init__(
        self,
        catalog: AgentCatalog,
        graph_for: GraphFor,
        *,
        concurrency: int = 4,
        max_depth: int = 1,
        max_input_tokens: int | None = None,
        max_turns: int | None = None,
        base_url: str = "",
    ) -> None:
        self.catalog = catalog
        self._graph_for = graph_for
        self._slots = asyncio.Semaphore(concurrency)
        self.max_depth = max(1, min(max_depth, MAX_DEPTH))
        self._max_input_tokens = max_input_tokens
        self._max_turns = max_turns
        self._base_url = base_url

    def may_nest(self, path: tuple[str, ...]) -> bool:
        """Whether the agent at ``path`` may start subagents of its own."""
        return len(path) < self.max_depth

    async def run(self, request: TaskRequest) -> TaskOutcome:
        definition = self.catalog.agents.get(request.agent_type)
        if definition is None:
            names = ", ".join(self.catalog.agents)
            return TaskOutcome(
                f"task: there is no agent named {request.agent_type!r}; the agents are: {names}",
                True,
            )
        path = task_path(request.parent.agent, request.number)
        thread = task_thread(request.parent_thread, request.number)
        async with self._slots:
            started = time.monotonic()
            stopped = await self._waiting(definition, path, thread, request.call_id)
            if not stopped.pending:  # not a run going on from a question: a new one
                request.writer(
                    SubagentStarted(
                        request.call_id, definition.name, request.description, thread, agent=path
                    )
                )
            tally = TurnTally()
            try:
                graph = self._graph_for(definition, self.may_nest(path))
                context = self._context(request, definition, path)
                messages = await self._follow(graph, thread, request, stopped, context, tally)
            except GraphBubbleUp:  # the parent's run stops to ask its client a subagent's question
                raise
            except asyncio.CancelledError:
                request.writer(
                    self._finished(
                        request, path, tally, started, ToolStatus.CANCELLED, "", "interrupted"
                    )
                )
                raise
            except BudgetReached as exc:  # the parent stops at its own next request
                return self._failed(request, path, tally, started, str(exc))
            except ModelCallLimitExceededError:
                line = (
                    f"stopped after {tally.num_turns} model turns (--max-turns {self._max_turns})"
                )
                return self._failed(request, path, tally, started, line)
            except Exception as exc:  # noqa: BLE001 - the parent's model gets one line, and goes on
                return self._failed(
                    request, path, tally, started, describe_model_error(exc, self._base_url)
                )
            content = result_content(tally.last_text, messages)
            request.writer(
                self._finished(request, path, tally, started, ToolStatus.OK, tally.last_text, "")
            )
            return TaskOutcome(content, False)

    def _context(
        self, request: TaskRequest, definition: AgentDefinition, path: tuple[str, ...]
    ) -> RunContext:
        parent = request.parent
        return RunContext(
            parent.approver,
            ScopedPolicy(parent.policy, definition.approve, parent.backend),
            parent.backend,
            agent=path,
            changes=parent.changes,  # a subagent's writes are its session's to rewind
            hooks=parent.hooks,
            # Its requests count in the session's budget, under its agent's name.
            budget=parent.budget.for_agent(definition.name) if parent.budget is not None else None,
        )

    async def _waiting(
        self, definition: AgentDefinition, path: tuple[str, ...], thread: str, call_id: str
    ) -> Stopped:
        """Where the subagent's thread stands: what it stopped to ask for ``call_id``, if
        anything (nothing when its graph cannot be built: the run then says why)."""
        try:
            graph = self._graph_for(definition, self.may_nest(path))
            stopped = await _detached(_stopped_at(graph, _config(thread, call_id, 0)))
        except Exception:  # noqa: BLE001 - the run that follows meets it and reports it
            return Stopped()
        return stopped if stopped.call_id == call_id else Stopped()

    async def _follow(
        self,
        graph: Any,
        thread: str,
        request: TaskRequest,
        stopped: Stopped,
        context: RunContext,
        tally: TurnTally,
    ) -> list[BaseMessage]:
        """The subagent's run, to its end; its thread's messages after.

        A subagent that stops on interrupts (a served run's approvals) has its questions asked
        again in the parent's run, as interrupts of this ``task`` call. When the parent's node
        runs again with the answers, the subagent goes on from its checkpoint with them, where
        it stopped (``stopped``): no model call is made again and no tool runs twice.
        """
        questions = ParentQuestions()
        start: HumanMessage | Command[Any] = HumanMessage(content=request.description)
        answered = stopped.answered
        if stopped.pending:  # its figures so far were counted in an earlier run of this node
            recount = StreamTranslator(self._max_input_tokens, tally=tally)
            for message in stopped.messages:
                if isinstance(message, AIMessage):
                    list(recount.on_message(message))
        while True:
            if stopped.pending:
                start = Command(resume=questions.answers(stopped))
                answered += len(stopped.pending)
            config = _config(thread, request.call_id, answered)
            driven = self._drive(graph, config, start, context, request.writer, tally)
            stopped = await _detached(driven)
            if not stopped.pending:
                return stopped.messages

    async def _drive(
        self,
        graph: Any,
        config: dict[str, Any],
        start: HumanMessage | Command[Any],
        context: RunContext,
        writer: Writer,
        tally: TurnTally,
    ) -> Stopped:
        """Run the subagent from ``start`` (its job, or the answers to what it asked) until it
        ends or stops to ask, forwarding its events."""
        translator = StreamTranslator(self._max_input_tokens, tally=tally)
        thread = config["configurable"]["thread_id"]
        active = False
        step = _input(start)
        while True:
            stream = graph.astream(
                step,
                config,
                context=context,
                stream_mode=list(STREAM_MODES),
                durability="sync",
            )
            async with aclosing(stream):
                async for mode, data in stream:
                    for event in translator.on_stream(mode, data):
                        writer(event.from_agent(context.agent))
            stopped = await _stopped_at(graph, config)
            if stopped.pending:
                return stopped
            message = await _subagent_stop(context, thread, active, writer)
            if message is None:
                return stopped
            step, active = _input(message), True

    def _failed(
        self,
        request: TaskRequest,
        path: tuple[str, ...],
        tally: TurnTally,
        started: float,
        line: str,
    ) -> TaskOutcome:
        request.writer(self._finished(request, path, tally, started, ToolStatus.ERROR, "", line))
        return TaskOutcome(f"task failed: {line}", True)

    @staticmethod
    def _finished(
        request: TaskRequest,
        path: tuple[str, ...],
        tally: TurnTally,
        started: float,
        status: ToolStatus,
        result: str,
        error: str,
    ) -> SubagentFinished:
        return SubagentFinished(
            request.call_id,
            status,
            result,
            num_turns=tally.num_turns,
            input_tokens=tally.all_input_tokens,
            output_tokens=tally.all_output_tokens,
            cached_tokens=tally.all_cached_tokens,
            duration_ms=int((time.monotonic() - started) * 1000),
            error=error,
            agent=path,
        )


def result_content(text: str, messages: list[BaseMessage]) -> str | list[dict[str, object]]:
    """The subagent's final answer, and references to the images its thread holds (the newest
    ``MAX_IMAGES``; the others are named so that the parent can read them)."""
    answer = text.strip() or "(the subagent finished without a final answer)"
    images = image_references(messages)
    if not images:
        return answer
    shown, named = images[-MAX_IMAGES:], images[:-MAX_IMAGES]
    blocks: list[dict[str, object]] = [{"type": "text", "text": answer}]
    if named:
        names = ", ".join(
            str(block.get("name") or str(block.get("attachment_id", ""))[:12]) for block in named
        )
        blocks.append(
            {"type": "text", "text": f"Earlier images the subagent saw (not attached): {names}"}
        )
    blocks.extend(shown)
    return blocks


def image_references(messages: list[BaseMessage]) -> list[dict[str, object]]:
    """The image reference blocks in ``messages``, oldest first, each attachment once."""
    seen: set[str] = set()
    found: list[dict[str, object]] = []
    for message in messages:
        if isinstance(message.content, str):
            continue
        for block in message.content:
            if (
                isinstance(block, dict)
                and block.get("source_type") == SOURCE_TYPE
                and block.get("type") == "image"
            ):
                key = str(block.get("attachment_id"))
                if key not in seen:
                    seen.add(key)
                    found.append(dict(block))
    return found


def _config(thread: str, call_id: str, answered: int) -> dict[str, Any]:
    return {
        "configurable": {"thread_id": thread},
        "recursion_limit": RECURSION_LIMIT,
        # Kept with each checkpoint the run writes.
        "metadata": {CALL_KEY: call_id, ANSWERS_KEY: answered},
    }


def _input(start: HumanMessage | Command[Any]) -> dict[str, Any] | Command[Any]:
    """What a run of the subagent's graph starts from: a message, or the answers it waits on."""
    if isinstance(start, Command):
        return start
    return {"messages": [start]}


async def _detached(work: Coroutine[Any, Any, T]) -> T:
    """``work`` in a fresh ``contextvars.Context``: the subagent's graph is a run of its own,
    not a subgraph of the parent's."""
    return await asyncio.create_task(work, context=contextvars.Context())


async def _stopped_at(graph: Any, config: dict[str, Any]) -> Stopped:
    snapshot = await graph.aget_state(config)
    if snapshot is None:
        return Stopped()
    metadata = snapshot.metadata or {}
    answered = metadata.get(ANSWERS_KEY)
    return Stopped(
        tuple(snapshot.interrupts),
        answered if isinstance(answered, int) else 0,
        list((snapshot.values or {}).get("messages", [])),
        str(metadata.get(CALL_KEY) or ""),
    )


async def _subagent_stop(
    context: RunContext, thread: str, active: bool, writer: Writer
) -> HumanMessage | None:
    """``SubagentStop`` as a subagent ends: a block sends its reason back to the subagent,
    which goes on (``stop_hook_active`` says it already did once); None: it stops."""
    hooks = context.hooks
    if hooks is None or not hooks.has("SubagentStop"):
        return None
    payload = {"session_id": thread, "stop_hook_active": active}
    outcome = await hooks.fire(
        "SubagentStop", payload, lambda e: writer(e.from_agent(context.agent)), agent=context.agent
    )
    if outcome.stop:  # the subagent stops as it meant to; the hook's reason is said
        writer(Notice(stopped_line(outcome.stop_reason, "subagent"), agent=context.agent))
        return None
    if not outcome.blocked:
        return None
    reason = outcome.reason or "a SubagentStop hook asked you to go on"
    writer(Notice(f"a SubagentStop hook asked the agent to go on: {reason}", agent=context.agent))
    return HumanMessage(
        content=f"SubagentStop hook: {reason}", additional_kwargs={HOOK_MARKER: "SubagentStop"}
    )
