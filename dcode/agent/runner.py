"""The session runner: one turn of the graph in, one typed event stream out.

Both the TUI and headless mode consume ``run_turn``, a plain async generator over the graph's
stream: the model's chunks, the nodes' updates, and the middleware's events on LangGraph's
``custom`` stream. It always ends with ``TurnFinished`` (ok, interrupted or an error), whatever
fails on the way: the model, a checkpoint write, the session's record, the translation. When
session store itself fails, the store is checked: damage ends the turn with the line that says
so, and nothing more of the turn is written to it.

``cancel`` interrupts the running turn from elsewhere (Esc, Ctrl+C). It cancels the consuming
task only while the turn is waiting on the graph or the thread; a cancel that comes while the
consumer is busy with an event is honoured when it asks for the next one, so the interrupt never
lands in the consumer's own code. Once an interrupt is being settled, more cancels change nothing.

The runner also keeps the thread consistent whatever happens to a turn: a cancelled or killed
turn leaves tool calls without results, and the next turn would be rejected by the provider, so
dangling calls are answered with a "cancelled" result before each turn and after an interrupt.
An answer cut short, by an interrupt or by a failure mid-answer (a stall, a dropped
connection), keeps what had streamed as a partial answer marked as such. A prompt too large for the conversation goes in as a preview of its archive (``paste_archive``).
"""

# Any: LangGraph's compiled graph, its stream items and LangChain message content are untyped

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from dcode.agent.approval import ApprovalPolicy, Approver
from dcode.agent.async_tasks.records import status_event
from dcode.agent.attached_files import AttachedFile, marker
from dcode.agent.budget import (
    COMPACTION,
    AgentBudget,
    BudgetReached,
    Limits,
    SessionBudget,
    UsageRow,
)
from dcode.agent.compaction.record import read_compaction
from dcode.agent.compaction.summary import Compacted, CompactionFailed
from dcode.agent.events import (
    AsyncTaskStatus,
    CompactionFinished,
    ErrorEvent,
    Event,
    Notice,
    SubagentStarted,
    TurnFinished,
    TurnStarted,
)
from dcode.agent.hooks.context_text import with_context
from dcode.agent.hooks.outcome import stopped_line
from dcode.agent.markers import CANCELLED_MARKER, HOOK_MARKER
from dcode.agent.paste_archive import archive_paste
from dcode.agent.rewind.changes import ChangeLog
from dcode.agent.rewind.code import CodePlan, plan_code, restore_code
from dcode.agent.rewind.conversation import rewind_thread
from dcode.agent.rewind.outcome import RewindOutcome
from dcode.agent.run_context import RECURSION_LIMIT, RunContext
from dcode.agent.session_files import HISTORY_DIR
from dcode.agent.store.base import DAMAGED_DATABASE, SessionDatabaseError, SessionHeld, Turn
from dcode.agent.stream import STREAM_MODES, StreamTranslator
from dcode.agent.tools.result import ToolResult, ToolStatus
from dcode.agent.tools.result_message import message_fields
from dcode.agent.turn_interrupt import TurnInterrupt, dangling_tool_calls
from dcode.models.errors import describe_model_error

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from dcode.agent.backends.local import LocalBackend
    from dcode.agent.compaction.summary import Compactor
    from dcode.agent.hooks.runner import Hooks
    from dcode.agent.store.base import SessionStore
    from dcode.models.factory import ResolvedModel
    from dcode.settings.config import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


class TurnEngine(Protocol):
    """What a runner uses of the engine that hands it out (``dcode.agent.engine.Engine``).

    Named here, so the runner needs nothing of the engine's module: the engine imports the
    runner to hand runners out, never the other way round.
    """

    @property
    def settings(self) -> Settings: ...
    @property
    def resolved(self) -> ResolvedModel: ...
    @property
    def backend(self) -> LocalBackend: ...
    @property
    def store(self) -> SessionStore: ...
    @property
    def checkpointer(self) -> BaseCheckpointSaver: ...
    @property
    def compactor(self) -> Compactor: ...
    @property
    def graph(self) -> Any:
        """The compiled agent graph, as the engine builds it (``dcode.agent.graph``)."""
        ...

    def confirm_held(self, session_id: str) -> None:
        """Make sure this process still holds the session; ``SessionHeld`` if not."""
        ...

    async def prepare_turn(self) -> list[str]:
        """Bring the graph up to date for a new turn; returns the notices to show."""
        ...


class SessionRunner:
    def __init__(
        self,
        engine: TurnEngine,
        session_id: str,
        approver: Approver,
        policy: ApprovalPolicy,
        *,
        hooks: Hooks | None = None,
    ) -> None:
        self.engine = engine
        self.session_id = session_id
        self.approver = approver
        self.policy = policy
        self.hooks = hooks
        self.start_source: str | None = "startup"
        """``SessionStart``'s source for the next turn (``startup``, or ``clear`` after
        ``/clear``; a thread with messages starts as ``resume``, and after ``/offload`` as
        ``compact``, as after the window's own compaction); None once it has fired."""
        self.started = False
        """``SessionStart`` has fired: ``SessionEnd`` fires too when the session ends."""
        self._interrupt: TurnInterrupt | None = None
        self._settled: tuple[str, int] | None = None
        """(the thread's head, its size) as a turn that ended cleanly left it: the next turn
        that finds the same head has nothing to settle, and skips reading the history."""
        settings = engine.settings
        self.limits = Limits(settings.budget_usd, settings.budget_tokens)
        """The session's caps: the settings' (and the command line's), until ``/budget`` raises them."""

    @property
    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.session_id}, "recursion_limit": RECURSION_LIMIT}

    @property
    def busy(self) -> bool:
        return self._interrupt is not None

    async def messages(self) -> list[BaseMessage]:
        """The thread's whole history, for painting a resumed transcript."""
        snapshot = await self.engine.graph.aget_state(self.config)
        return list(snapshot.values.get("messages", [])) if snapshot and snapshot.values else []

    async def async_tasks(self) -> list[AsyncTaskStatus]:
        """The session's async tasks as their records last saw them, for a resumed screen to
        show and follow (they are private state: a read of the thread's values leaves them
        out, its checkpoint holds them)."""
        head = await self.engine.checkpointer.aget_tuple(
            {"configurable": {"thread_id": self.session_id, "checkpoint_ns": ""}}
        )
        values = head.checkpoint.get("channel_values") if head is not None else None
        records = values.get("async_tasks") if isinstance(values, dict) else None
        if not isinstance(records, dict):
            return []
        return [status_event(task) for task in records.values()]

    async def add_user_note(self, text: str, marks: dict[str, Any] | None = None) -> None:
        """Put text into the thread as a user message without running the model (``!cmd``);
        ``marks`` go on the message (``dcode.agent.markers``)."""
        await self._repair_dangling_calls()
        message = HumanMessage(content=text, additional_kwargs=dict(marks or {}))
        await self.engine.graph.aupdate_state(self.config, {"messages": [message]}, as_node="model")

    async def compact(self, focus: str = "") -> list[Event]:
        """Compact the thread now, whatever its size (``/offload [FOCUS]``): the older messages
        are summarized (with ``focus`` kept in particular) and archived as the window's own
        compaction would, and later requests carry the summary. Returns what happened, as
        events (a notice when there is nothing to do)."""
        if self.busy:
            raise RuntimeError("a turn is running in this session")
        snapshot = await self.engine.graph.aget_state(self.config)
        values = snapshot.values if snapshot and snapshot.values else {}
        events: list[Event] = []
        budget = await self.budget()
        if reached := budget.reached():
            return [Notice(reached)]
        try:
            done = await self.engine.compactor.compact(
                list(values.get("messages", [])),
                read_compaction(values),
                session_id=self.session_id,
                emit=events.append,
                force=True,
                focus=focus,
                pre_compact=self._pre_compact(focus, events),
                budget=AgentBudget(budget),
            )
        except CompactionFailed:
            return events  # the notice says why
        finally:
            await self._record_usage(budget)
        if done is None:
            return [Notice("nothing to compact yet: the conversation is all recent")]
        if isinstance(done, Compacted):
            await self.engine.graph.aupdate_state(
                self.config, {"compaction": done.event}, as_node="model"
            )
            self.start_source = "compact"
        return events  # a refusal is among them, and nothing was written

    async def turns(self) -> list[Turn]:
        """The session's prompts so far, oldest first, each with the files changed from it on
        (what ``rewind`` can go back to)."""
        return await asyncio.to_thread(self.engine.store.turns, self.session_id)

    async def code_plan(self, turn: Turn) -> CodePlan:
        """What putting the files back to before ``turn`` would do, to show before doing it."""
        return await asyncio.to_thread(plan_code, self.engine.store, turn)

    async def rewind(
        self, turn: Turn, *, conversation: bool = True, code: bool = True
    ) -> RewindOutcome:
        """Take the session back to before ``turn``: the conversation (a new head of the same
        thread; the turn and those after it are forgotten), the files dcode's file tools changed
        since, or both. Raises ``RewindError`` (one line) when the conversation cannot be."""
        if self.busy:
            raise RuntimeError("a turn is running in this session")
        left = None
        if conversation:
            messages = await rewind_thread(
                self.engine.graph,
                self.engine.store,
                self.session_id,
                turn.checkpoint_id,
            )
            left = len(messages)
            await asyncio.to_thread(self.engine.store.forget_turns, self.session_id, turn.id)
            await asyncio.to_thread(self.engine.store.rewound, self.session_id, message_count=left)
        report = None
        if code:
            plan = await self.code_plan(turn)
            report = await asyncio.to_thread(
                restore_code,
                self.engine.store,
                plan,
                session_id=self.session_id,
                shown=self.engine.backend.display_path,
            )
        return RewindOutcome(turn, left, report)

    def cancel(self) -> bool:
        """Interrupt the running turn; ``run_turn`` then finishes with ``interrupted=True``."""
        if self._interrupt is None:
            return False
        self._interrupt.request()
        return True

    async def run_turn(
        self,
        content: str | list[dict[str, Any]] | None,
        *,
        prompt_text: str | None = None,
        attached: Sequence[AttachedFile] = (),
    ) -> AsyncGenerator[Event, None]:
        """The turn's events, ending with ``TurnFinished``. Iterate it from one task to the end,
        or close it (``contextlib.aclosing``) when leaving early. ``attached``: the files of
        ``content`` attached with ``@path`` (recorded on the message, see ``attached_files``).
        ``content`` None goes on from where the thread stopped, with no new message: the turn
        the budget ended, once it is raised."""
        interrupt = self._interrupt = TurnInterrupt.begin(self._interrupt)
        prompt = (
            prompt_text if prompt_text is not None else content if isinstance(content, str) else ""
        )
        started = time.monotonic()
        translator = StreamTranslator(self.engine.resolved.profile.max_input_tokens)
        sent, interrupted, error, leaving = False, False, "", False
        budget, exceeded = SessionBudget(self.limits), False
        subagent_threads: list[str] = []
        try:
            yield TurnStarted(self.session_id, prompt)
            try:
                translator = await self._translator()
                budget = await self.budget()
                for notice in await interrupt.guard(self.engine.prepare_turn()):
                    yield Notice(notice)
                hooked = (
                    await interrupt.guard(self._prompt_hooks(prompt))
                    if content is not None
                    else HookedPrompt()
                )
                for event in hooked.events:
                    yield event
                if hooked.refusal:
                    error = hooked.refusal
                    yield ErrorEvent(error, kind="hook_blocked")
                elif not interrupt.requested:
                    sending, notices = await self._opening(content, prompt, interrupt)
                    for notice in notices:
                        yield Notice(notice)
                    sent = True
                    message = (
                        None
                        if sending is None
                        else HumanMessage(
                            content=cast(
                                "str | list[str | dict[Any, Any]]",
                                with_context(sending, hooked.context),
                            ),
                            additional_kwargs=marker(attached),
                        )
                    )
                    async with aclosing(
                        self._answer(message, interrupt, translator, subagent_threads, budget)
                    ) as answer:
                        async for event in answer:
                            yield event
                if interrupt.requested:  # its cancellation may have been swallowed on the way
                    leaving, interrupted = interrupt.absorb(), True
            except asyncio.CancelledError as exc:
                leaving = interrupt.absorb()
                if leaving or interrupt.requested:
                    interrupted = True
                else:  # raised inside without anyone cancelling the turn: a failure like any other
                    log.debug("turn failed", exc_info=True)
                    error = describe_model_error(exc, self.engine.resolved.endpoint.base_url)
                    yield ErrorEvent(error, kind=type(exc).__name__)
            except BudgetReached as exc:
                error, exceeded = str(exc), True
                yield ErrorEvent(error, kind="budget")
            except ModelCallLimitExceededError:
                error = f"stopped after {translator.tally.num_turns} model turns (--max-turns {self.engine.settings.max_turns})"
                yield ErrorEvent(error, kind="max_turns")
            except Exception as exc:
                if interrupt.requested:  # the interrupt surfaced as another error on its way out
                    leaving, interrupted = interrupt.absorb(), True
                else:
                    log.debug("turn failed", exc_info=True)
                    error, kind = await self._failure_line(exc)
                    yield ErrorEvent(error, kind=kind)
            problems = await self._wind_up(
                prompt if sent else "",
                translator,
                interrupted=interrupted,
                failed=bool(error),
                subagent_threads=subagent_threads,
                budget=budget,
            )
            if leaving:
                raise asyncio.CancelledError
            for problem in problems:
                error = error or problem
                yield ErrorEvent(problem, kind=DAMAGED_DATABASE if self._damage() else "session")
            yield self._finished(
                translator, started, error=error, interrupted=interrupted, exceeded=exceeded
            )
        finally:
            self._interrupt = None

    async def _opening(
        self, content: str | list[dict[str, Any]] | None, prompt: str, interrupt: TurnInterrupt
    ) -> tuple[str | list[dict[str, Any]] | None, list[str]]:
        """What the turn sends the graph (a prompt too large goes as a preview of its archive),
        with the notices to show first; the thread is settled and the turn noted for
        ``/rewind``. A turn that goes on (``content`` None) sends nothing new."""
        if content is None:
            await asyncio.to_thread(self.engine.confirm_held, self.session_id)
            return None, []
        archived = await asyncio.to_thread(
            archive_paste, content, self.engine.settings.home / HISTORY_DIR
        )
        notices = [
            f"the message is too large for the conversation: it was saved to {path}, and the model gets a preview"
            for path in archived.paths
        ]
        notices += archived.failed
        notices += await interrupt.guard(self._begin(prompt))
        return archived.content, notices

    async def _failure_line(self, exc: Exception) -> tuple[str, str]:
        """The line (and event kind) for a failed turn. A failure of the session database has
        the file checked: damage is said as such, with how to get going again."""
        if isinstance(exc, SessionHeld):
            return (
                f"{exc}: the turn did not run; start a new session, or resume once it is free",
                "session_held",
            )
        refusal = await self._database_refusal(exc)
        if refusal is not None:
            return str(refusal), DAMAGED_DATABASE if refusal.damaged else "session"
        return describe_model_error(exc, self.engine.resolved.endpoint.base_url), type(exc).__name__

    async def _database_refusal(self, exc: BaseException) -> SessionDatabaseError | None:
        return await asyncio.to_thread(self.engine.store.refusal, exc)

    def _damage(self) -> SessionDatabaseError | None:
        return self.engine.store.known_damage()

    async def usage(self) -> list[UsageRow]:
        """What the session spent, by model and agent (``/cost``)."""
        return await asyncio.to_thread(self.engine.store.usage, self.session_id)

    async def budget(self) -> SessionBudget:
        """The session's budget as a turn starts: the spend stored so far against
        ``limits``. Tokens the session's totals hold beyond its rows (spent before usage was
        kept by model and agent) count too, priced with the session's model."""
        rows = await asyncio.to_thread(self.engine.store.usage, self.session_id)
        info = await asyncio.to_thread(self.engine.store.get, self.session_id)
        if info is not None:
            agents = [row for row in rows if row.agent != COMPACTION]  # not in the totals
            earlier = UsageRow(
                self.engine.resolved.spec,
                "",
                max(0, info.input_tokens - sum(row.input_tokens for row in agents)),
                max(0, info.cached_tokens - sum(row.cached_tokens for row in agents)),
                max(0, info.output_tokens - sum(row.output_tokens for row in agents)),
            )
            if earlier.tokens:
                earlier.cost_usd = self.engine.resolved.profile.cost(
                    earlier.input_tokens, earlier.output_tokens, earlier.cached_tokens
                )
                rows.append(earlier)
        return SessionBudget.starting(self.limits, rows)

    async def _record_usage(self, budget: SessionBudget) -> None:
        if budget.rows:
            await asyncio.to_thread(
                self.engine.store.record_usage, self.session_id, list(budget.rows.values())
            )
            budget.rows.clear()

    async def _translator(self) -> StreamTranslator:
        info = await asyncio.to_thread(self.engine.store.get, self.session_id)
        session_tokens = (
            (info.input_tokens, info.output_tokens, info.cached_tokens) if info else (0, 0, 0)
        )
        return StreamTranslator(self.engine.resolved.profile.max_input_tokens, session_tokens)

    async def _begin(self, prompt: str) -> list[str]:
        """Settle the thread for a new turn, note where it stands for ``/rewind``, and list the
        session by its prompt now, so that a process killed during the turn leaves a session
        with a title and its size. Returns the notices to show: a turn that could not be noted
        for ``/rewind`` still runs."""
        await asyncio.to_thread(self.engine.confirm_held, self.session_id)
        settled, self._settled = self._settled, None
        checkpoint = await self._head()
        if settled is not None and settled[0] == checkpoint:
            count = settled[1]  # as the last turn left it: no call without its result
        else:
            count = await self._repair_dangling_calls()
            checkpoint = await self._head()
        notices = []
        try:
            await asyncio.to_thread(
                self.engine.store.begin_turn, self.session_id, prompt, checkpoint
            )
        except Exception as exc:
            if self._damage():
                raise  # a damaged file: nothing more is written to it, this turn included
            log.debug("recording the turn for /rewind failed", exc_info=True)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            notices.append(f"/rewind will not be able to go back to before this prompt: {why}")
        await asyncio.to_thread(
            self.engine.store.start_turn, self.session_id, prompt=prompt, message_count=count + 1
        )
        return notices

    async def end_session(self, reason: str) -> list[Event]:
        """Fire ``SessionEnd`` (``reason``: ``clear``, ``logout``, ``prompt_input_exit`` or
        ``other``) for a session that started; returns its events (nothing when none ran)."""
        events: list[Event] = []
        if self.hooks is not None and self.started:
            payload = {"session_id": self.session_id, "reason": reason}
            await self.hooks.fire("SessionEnd", payload, events.append, target=reason)
        return events

    def _pre_compact(self, focus: str, events: list[Event]) -> Callable[[], Awaitable[object]]:
        """The ``PreCompact`` hooks (trigger ``manual``) to run before ``/offload``'s summary."""
        hooks = self.hooks

        async def run() -> None:
            if hooks is not None:
                payload = {
                    "session_id": self.session_id,
                    "trigger": "manual",
                    "custom_instructions": focus,
                }
                await hooks.fire("PreCompact", payload, events.append, target="manual")

        return run

    async def _answer(
        self,
        message: HumanMessage | None,
        interrupt: TurnInterrupt,
        translator: StreamTranslator,
        subagent_threads: list[str],
        budget: SessionBudget,
    ) -> AsyncGenerator[Event, None]:
        """The graph's events for ``message`` (None: on from where the thread stopped); then,
        each time a ``Stop`` hook sends the agent back, for the hook's reason. Stops at an
        interrupt."""
        stop_active = False
        next_message: HumanMessage | None = message
        while True:
            async with aclosing(self._graph_stream(next_message, budget)) as stream:
                while (
                    not interrupt.requested
                    and (item := await interrupt.guard(anext(stream, None))) is not None
                ):
                    for event in translator.on_stream(*item):
                        if isinstance(event, SubagentStarted):
                            subagent_threads.append(event.thread_id)
                        elif isinstance(event, CompactionFinished) and not event.agent:
                            self.start_source = "compact"  # as after /offload: see _prompt_hooks
                        yield event
            if interrupt.requested:
                return
            stopping = await interrupt.guard(self._stop_hooks(stop_active))
            for event in stopping.events:
                yield event
            if stopping.again is None:
                return
            next_message, stop_active = stopping.again, True

    async def _prompt_hooks(self, prompt: str) -> HookedPrompt:
        """``SessionStart`` on the runner's first turn and the first after a compaction (its
        context and ``UserPromptSubmit``'s go with the prompt), then ``UserPromptSubmit``,
        which may refuse the prompt."""
        hooked = HookedPrompt()
        if self.hooks is None:
            return hooked
        if self.start_source is not None:
            source = self.start_source
            if source == "startup" and await self._message_count():
                source = "resume"
            self.start_source, self.started = None, True
            started = await self.hooks.fire(
                "SessionStart",
                {"session_id": self.session_id, "source": source},
                hooked.events.append,
                target=source,
            )
            hooked.context += started.context
        submitted = await self.hooks.fire(
            "UserPromptSubmit",
            {"session_id": self.session_id, "prompt": prompt},
            hooked.events.append,
        )
        hooked.context += submitted.context
        if submitted.blocked or submitted.stop:
            why = submitted.reason or submitted.stop_reason or "no reason given"
            hooked.refusal = f"a UserPromptSubmit hook blocked the prompt: {why}"
        return hooked

    async def _stop_hooks(self, active: bool) -> StopHooks:
        """``Stop`` as the agent ends its answer: a block sends its reason back to the agent,
        which goes on (``stop_hook_active`` tells the hook it already did once)."""
        stopping = StopHooks()
        if self.hooks is None or not self.hooks.has("Stop"):
            return stopping
        outcome = await self.hooks.fire(
            "Stop",
            {"session_id": self.session_id, "stop_hook_active": active},
            stopping.events.append,
        )
        if outcome.stop:  # the agent stops as it meant to; the hook's reason is said
            stopping.events.append(Notice(stopped_line(outcome.stop_reason)))
        elif outcome.blocked:
            reason = outcome.reason or "a Stop hook asked you to go on"
            stopping.events.append(Notice(f"a Stop hook asked the agent to go on: {reason}"))
            stopping.again = HumanMessage(
                content=f"Stop hook: {reason}", additional_kwargs={HOOK_MARKER: "Stop"}
            )
        return stopping

    def _graph_stream(
        self, message: HumanMessage | None, budget: SessionBudget
    ) -> AsyncGenerator[Any, None]:
        """The graph's run for ``message``, or (None) on from the step the thread stopped
        before."""
        return self.engine.graph.astream(
            None if message is None else {"messages": [message]},
            self.config,
            context=RunContext(
                self.approver,
                self.policy,
                self.engine.backend,
                changes=ChangeLog(self.engine.store, self.session_id),
                hooks=self.hooks,
                budget=AgentBudget(budget),
            ),
            stream_mode=list(STREAM_MODES),
            durability="sync",
        )

    async def _wind_up(
        self,
        prompt: str,
        translator: StreamTranslator,
        *,
        interrupted: bool,
        failed: bool,
        subagent_threads: list[str],
        budget: SessionBudget,
    ) -> list[str]:
        """Keep the partial answer of a turn cut short (interrupted, or failed mid-answer: a
        stall, a dropped connection), close the calls an interrupt left open (in the subagents'
        threads too), then record the turn in the session's metadata; returns what could not
        be done, one line each. Nothing is written to a database found damaged."""
        problems: list[str] = []
        if self._damage():
            return problems
        if interrupted:
            try:
                await self._settle_after_interrupt(translator.tally.partial_text)
                for thread in subagent_threads:
                    await self._repair_dangling_calls(thread)
            except Exception as exc:
                log.debug("settling the interrupt failed", exc_info=True)
                problems.append(f"could not save the interrupted turn: {await self._problem(exc)}")
        elif failed:
            try:
                await self._keep_partial(translator.tally.partial_text)
            except Exception as exc:
                log.debug("keeping the partial answer failed", exc_info=True)
                problems.append(f"could not save the partial answer: {await self._problem(exc)}")
        if self._damage():
            return problems
        tally = translator.tally
        try:
            await asyncio.to_thread(
                self.engine.store.record_turn,
                self.session_id,
                prompt=prompt,
                model=self.engine.resolved.spec,
                message_count=await self._message_count(settled=not interrupted and not failed),
                input_tokens=tally.all_input_tokens,
                output_tokens=tally.all_output_tokens,
                context_tokens=tally.context_tokens,
                cached_tokens=tally.all_cached_tokens,
                subagent_tokens=(
                    tally.subagent_input_tokens,
                    tally.subagent_output_tokens,
                    tally.subagent_cached_tokens,
                ),
            )
            await self._record_usage(budget)
        except Exception as exc:
            log.debug("recording the turn failed", exc_info=True)
            problem = await self._problem(exc)
            problems.append(
                problem
                if self._damage()
                else f"could not record the turn in {self.engine.store.location}: {problem}"
            )
        return problems

    async def _problem(self, exc: Exception) -> str:
        refusal = await self._database_refusal(exc)
        return str(refusal) if refusal is not None else describe_model_error(exc)

    def _finished(
        self,
        translator: StreamTranslator,
        started: float,
        *,
        error: str,
        interrupted: bool,
        exceeded: bool = False,
    ) -> TurnFinished:
        return translator.tally.finished(
            self.session_id,
            int((time.monotonic() - started) * 1000),
            error=error,
            interrupted=interrupted,
            exceeded=exceeded,
        )

    async def _message_count(self, *, settled: bool = False) -> int:
        """The thread's size; ``settled``: the turn ended cleanly, and if its last message is
        an answer without calls, the next turn may skip settling the thread (``_begin``)."""
        try:
            snapshot = await self.engine.graph.aget_state(self.config)
        except Exception:  # noqa: BLE001 - a count is not worth failing a turn
            return 0
        messages = snapshot.values.get("messages", []) if snapshot and snapshot.values else []
        head = (
            (snapshot.config.get("configurable") or {}).get("checkpoint_id") if snapshot else None
        )
        last = messages[-1] if messages else None
        if settled and head and isinstance(last, AIMessage) and not last.tool_calls:
            self._settled = (str(head), len(messages))
        return len(messages)

    async def _settle_after_interrupt(self, partial_text: str) -> None:
        """Keep the partial answer in the thread, then close any calls left without results."""
        await self._keep_partial(partial_text)
        await self._repair_dangling_calls()

    async def _keep_partial(self, partial_text: str) -> None:
        """The answer streamed so far, into the thread as an answer cut short (marked as such:
        a resumed transcript shows it, and the model reads it as what it had said)."""
        if partial_text.strip():
            await self.engine.graph.aupdate_state(
                self.config,
                {
                    "messages": [
                        AIMessage(content=partial_text, additional_kwargs={CANCELLED_MARKER: True})
                    ]
                },
                as_node="model",
            )

    async def _head(self) -> str | None:
        """The id of the session thread's latest checkpoint (None: a new thread)."""
        head = await self.engine.checkpointer.aget_tuple(
            {"configurable": {"thread_id": self.session_id, "checkpoint_ns": ""}}
        )
        return str(head.config["configurable"]["checkpoint_id"]) if head is not None else None

    async def _repair_dangling_calls(self, thread: str | None = None) -> int:
        """Answer the calls left without results in the session's thread (or a subagent's
        ``thread``); returns the thread's size afterwards."""
        config = self.config if thread is None else {"configurable": {"thread_id": thread}}
        snapshot = await self.engine.graph.aget_state(config)
        messages = list(snapshot.values.get("messages", [])) if snapshot and snapshot.values else []
        missing = dangling_tool_calls(messages)
        if not missing:
            return len(messages)
        cancelled = message_fields(
            ToolResult(
                "cancelled: the user interrupted this call before it finished",
                status=ToolStatus.CANCELLED,
            )
        )
        results = [
            ToolMessage(**cancelled, tool_call_id=call_id, name=name) for call_id, name in missing
        ]
        # A turn cut short while its tools ran may hold the calls' answer only in the writes of
        # the step it left unfinished, which an update does not carry over: the answer goes in
        # again (by its id: where the thread has it, it stays as it is), or its results would
        # follow no call.
        ids = {call_id for call_id, _ in missing}
        owners = [
            m
            for m in messages
            if isinstance(m, AIMessage) and any(call.get("id") in ids for call in m.tool_calls)
        ]
        await self.engine.graph.aupdate_state(
            config, {"messages": [*owners, *results]}, as_node="tools"
        )
        return len(messages) + len(results)


@dataclass
class HookedPrompt:
    """What the hooks said of a prompt: their events, the context to send with it, and why it
    is refused ("" when it goes on)."""

    events: list[Event] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    refusal: str = ""


@dataclass
class StopHooks:
    """What the ``Stop`` hooks said: their events, and the message to go on with (None: stop)."""

    events: list[Event] = field(default_factory=list)
    again: HumanMessage | None = None


__all__ = ["SessionRunner", "dangling_tool_calls"]
