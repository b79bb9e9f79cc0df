"""Sessions run on a dcode server (``dcode --server URL``): the remote engine's runner.

``RemoteRunner`` is what ``SessionRunner`` is to the front ends (``run_turn``'s typed events
ending with ``TurnFinished``, ``cancel``, ``busy``, ``messages``), with the turn run by the
server's graph rather than in this process. The server's stream parts are read back into
messages and events (``wire``) and fed to dcode's own ``StreamTranslator``, so the events are
the embedded ones: the TUI and ``-p`` draw them without knowing where the graph ran.

An approval is an interrupt of the run: the front end's own approver answers it (a dialog in the
TUI, the approve mode's answer headless) and the runner resumes the run with the answer. The
client's approve mode goes in each run's context. A cancel (Esc, Ctrl+C) cancels the run on the
server, then settles the thread as the embedded runner does: the partial answer is kept, and the
calls it left open are answered as cancelled.
"""

# Any: the server's JSON is untyped

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, message_to_dict

from dcode.agent.approval import Denial
from dcode.agent.events import (
    ApprovalRequested,
    ErrorEvent,
    Event,
    Notice,
    ToolCallFinished,
    ToolCallRunning,
    TurnStarted,
)
from dcode.agent.markers import CANCELLED_MARKER
from dcode.agent.stream import StreamTranslator
from dcode.agent.tools.result import ToolResult, ToolStatus
from dcode.agent.tools.result_message import message_fields
from dcode.agent.turn_interrupt import TurnInterrupt, dangling_tool_calls
from dcode.server.carried import CARRIED_KEY, carry, upload
from dcode.server.client import (
    RemoteFailure,
    RemoteServer,
    ServedModel,
    ask_server,
    failure_line,
    opened_thread,
    segment,
    served_model,
)
from dcode.server.options import ASSISTANT_ID
from dcode.server.wire import event_of, message_of, resume_value, update_of
from dcode.settings.config import ApprovalMode

if TYPE_CHECKING:
    from dcode.agent.approval import ApprovalPolicy, Approver
    from dcode.agent.attached_files import AttachedFile
    from dcode.agent.budget import Limits, UsageRow
    from dcode.media.store import AttachmentStore

BUDGET_REACHED = "BudgetReached"
"""The error a served run ends with at the session's budget (``dcode.agent.budget``)."""
DENIED_PREFIX = "denied: "
"""How a refused call's result begins (``dcode.agent.middleware.approval.denied_message``)."""
STREAM_MODES = ["messages-tuple", "custom", "updates"]
"""What a client asks of a run: the model's chunks, dcode's events, the nodes' updates (and
with them the interrupts)."""


@dataclass
class RemotePolicy:
    """The part of the approval policy a client keeps: its mode, sent with every run. The
    server keeps the rest (approvals for the session, denials) for the thread."""

    mode: ApprovalMode
    denials: list[Denial] = field(default_factory=list)


@dataclass(frozen=True)
class ThreadNow:
    """A thread as a client opening it finds it (``RemoteRunner.now``)."""

    running: str | None
    """Its run still going on the server, if any."""
    messages: list[BaseMessage]
    waiting: list[dict[str, Any]]
    """The questions it waits on (its last run stopped on them)."""

    @classmethod
    def of(cls, running: str | None, state: Any) -> ThreadNow:
        """From what ``client.opened_thread`` read."""
        return cls(running, messages_of(state), _waiting(state))


@dataclass
class _Run:
    """One server run of a turn: its id once the server says it, and the interrupts it ended on."""

    run_id: str = ""
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    exceeded: bool = False
    """It stopped at the session's budget."""


class RemoteRunner:
    """A session (a thread of the server) whose turns run on the server."""

    def __init__(
        self,
        server: RemoteServer,
        session_id: str,
        approver: Approver,
        mode: ApprovalMode,
        *,
        context: dict[str, str] | None = None,
        max_input_tokens: int | None = None,
        exists: bool = False,
        policy: RemotePolicy | ApprovalPolicy | None = None,
        limits: Callable[[], Limits] | None = None,
        attachments: AttachmentStore | None = None,
    ) -> None:
        """``policy``: where the client's mode is kept (a front end's own policy, whose mode
        it changes; a ``RemotePolicy`` of ``mode`` by default). ``limits``: the session's
        budget as the front end holds it now (``/budget`` raises it), sent with every run.
        ``attachments``: the client's store, whose images a prompt names and its run carries
        to the server."""
        self.server = server
        self.session_id = session_id
        self.approver = approver
        self.policy = policy if policy is not None else RemotePolicy(mode)
        self.context = dict(context or {})
        self.limits = limits
        self.max_input_tokens = max_input_tokens
        self._exists = exists
        self._settled = False
        """The thread is as this runner's last turn left it, cleanly ended: nothing waits and no
        call is open, so the next turn need not look first."""
        self.attachments = attachments
        self._interrupt: TurnInterrupt | None = None
        self._run = _Run()
        self._running_args: dict[str, dict[str, object]] = {}
        """The arguments of the calls running, by id: a denial names them."""
        self.started = False
        """This client ran (or joined) a turn of the session, which is on the server: its end
        is the session's (``end_session``)."""

    @property
    def busy(self) -> bool:
        return self._interrupt is not None

    def run_context(self) -> dict[str, str]:
        """The run's JSON context: the client's settings, its approve mode and its budget
        (a limit it has none of is the server's)."""
        context = {**self.context, "mode": self.policy.mode.value}
        limits = self.limits() if self.limits is not None else None
        if limits is not None and limits.usd is not None:
            context["budget_usd"] = repr(limits.usd)
        if limits is not None and limits.tokens is not None:
            context["budget_tokens"] = str(limits.tokens)
        return context

    def cancel(self) -> bool:
        """Interrupt the running turn; the run is cancelled on the server."""
        if self._interrupt is None:
            return False
        self._interrupt.request()
        return True

    async def messages(self) -> list[BaseMessage]:
        """The thread's whole history, as the server holds it."""
        return messages_of(await self.state())

    async def state(self) -> Any:
        """The thread's state (values, the questions it waits on), read without langgraph-sdk's
        client (``RemoteServer.read``)."""
        return await self.server.read(f"/threads/{segment(self.session_id)}/state")

    async def run_turn(
        self,
        content: str | list[dict[str, Any]] | None,
        *,
        prompt_text: str | None = None,
        attached: Sequence[AttachedFile] = (),
    ) -> AsyncGenerator[Event, None]:
        """The turn's events, ending with ``TurnFinished``, as ``SessionRunner.run_turn``."""
        prompt = (
            prompt_text
            if prompt_text is not None
            else (content if isinstance(content, str) else "")
        )

        def body(translator: StreamTranslator, interrupt: TurnInterrupt) -> AsyncIterator[Event]:
            settled, self._settled = self._settled, False
            return self._turn(content, prompt, translator, interrupt, settled)

        async for event in self._as_turn(prompt, body):
            yield event

    def join_turn(
        self, run_id: str | None, history: Sequence[BaseMessage]
    ) -> AsyncGenerator[Event, None]:
        """The thread's run still going on the server (``run_id``; None: the run stopped on a
        question the thread still waits on), joined as a turn of this client: its events from
        where ``history`` (the thread's messages, read just before) ends, then the questions it
        asks answered by this front end's approver, as ``run_turn``'s are; Esc cancels it."""
        prompt = next((_text(m.content) for m in reversed(history) if m.type == "human"), "")

        def body(translator: StreamTranslator, interrupt: TurnInterrupt) -> AsyncIterator[Event]:
            self._settled = False
            return self._joined(run_id, history, translator, interrupt)

        return self._as_turn(prompt, body)

    async def _as_turn(
        self,
        prompt: str,
        body: Callable[[StreamTranslator, TurnInterrupt], AsyncIterator[Event]],
    ) -> AsyncGenerator[Event, None]:
        """``body``'s events as a turn: ``TurnStarted`` first, ``TurnFinished`` last, and an
        interrupt settled on the server (the run cancelled, the partial answer kept)."""
        interrupt = self._interrupt = TurnInterrupt.begin(self._interrupt)
        started = time.monotonic()
        translator = StreamTranslator(self.max_input_tokens)
        error, interrupted, leaving = "", False, False
        try:
            yield TurnStarted(self.session_id, prompt)
            try:
                async for event in body(translator, interrupt):
                    yield event
                if interrupt.requested:
                    leaving, interrupted = interrupt.absorb(), True
            except asyncio.CancelledError:
                leaving = interrupt.absorb()
                if not (leaving or interrupt.requested):
                    raise
                interrupted = True
            except Exception as exc:  # noqa: BLE001 - one line; the session goes on
                if interrupt.requested:
                    leaving, interrupted = interrupt.absorb(), True
                else:
                    error = failure_line(exc, self.server.url)
                    yield ErrorEvent(error, kind="server")
            if interrupted:
                problem = await self._settle(translator.tally.partial_text)
                if problem:
                    yield ErrorEvent(problem, kind="server")
            if leaving:
                raise asyncio.CancelledError
            error = error or self._run.error
            self._settled = not (error or interrupted)
            yield translator.tally.finished(
                self.session_id,
                int((time.monotonic() - started) * 1000),
                error=error,
                interrupted=interrupted,
                exceeded=self._run.exceeded,
            )
        finally:
            self._interrupt = None

    async def _turn(
        self,
        content: str | list[dict[str, Any]] | None,
        prompt: str,
        translator: StreamTranslator,
        interrupt: TurnInterrupt,
        settled: bool,
    ) -> AsyncIterator[Event]:
        """The turn's runs. A question the thread still waits on (its run was detached, or its
        client went away) is answered first by this front end's approver, and the run it
        stopped goes on to its end; calls left open are answered as cancelled (neither is
        looked for after a turn of this runner that ended cleanly: ``settled``). Then the
        prompt's run, and one more for each approval answered."""
        fresh = not self._exists
        await interrupt.guard(self._ensure_thread(prompt))
        if not (fresh or settled):
            state = await interrupt.guard(self.state())
            waiting = _waiting(state)
            if waiting:
                async for event in self._resumed(waiting, translator, interrupt):
                    yield event
            else:
                await interrupt.guard(self._close_open_calls(messages_of(state)))
        # None: the thread goes on from where it stopped, with no new message.
        message = None if content is None else {"messages": [{"role": "user", "content": content}]}
        prompted = {"input": message, "context": await self._prompt_context(content)}
        async for event in self._runs(prompted, translator, interrupt):
            yield event

    async def _runs(
        self, arguments: dict[str, Any], translator: StreamTranslator, interrupt: TurnInterrupt
    ) -> AsyncIterator[Event]:
        """A run with ``arguments``, then one resumed run for each time it stops to ask."""
        while not interrupt.requested:
            self._run = _Run()
            parts = self.server.client().runs.stream(
                self.session_id,
                ASSISTANT_ID,
                **{"context": self.run_context(), **arguments},
                stream_mode=STREAM_MODES,
                stream_resumable=True,
            )
            async for event in self.follow(parts, translator, interrupt, self._run):
                yield event
            if interrupt.requested or not self._run.interrupts:
                return
            arguments = {"command": {"resume": await self._answer(self._run.interrupts)}}

    async def _resumed(
        self,
        interrupts: list[dict[str, Any]],
        translator: StreamTranslator,
        interrupt: TurnInterrupt,
    ) -> AsyncIterator[Event]:
        """The questions a run stopped on, answered; the run goes on to its end."""
        answer = {"command": {"resume": await self._answer(interrupts)}}
        async for event in self._runs(answer, translator, interrupt):
            yield event

    async def _joined(
        self,
        run_id: str | None,
        history: Sequence[BaseMessage],
        translator: StreamTranslator,
        interrupt: TurnInterrupt,
    ) -> AsyncIterator[Event]:
        """``join_turn``'s runs: the live one followed to its end, then, when it stopped on a
        question (or the thread already waited on one), the question answered and the run
        going on as ``_runs`` goes on."""
        self._run = _Run(run_id or "")
        self.started = True
        if run_id is not None:
            parts = self.joined_stream(run_id)
            seen = seen_in(history)
            async for event in self.follow(parts, translator, interrupt, self._run, seen=seen):
                yield event
        waiting = self._run.interrupts
        if run_id is None:
            waiting = _waiting(await interrupt.guard(self.state()))
        if waiting and not interrupt.requested:
            async for event in self._resumed(waiting, translator, interrupt):
                yield event

    def joined_stream(self, run_id: str) -> AsyncIterator[Any]:
        """The stream parts of the thread's run ``run_id`` from its first event (the run keeps
        them: it was started resumable), for a client that joins it. All the modes the run was
        started with (``STREAM_MODES``): naming them again would leave out the model's chunks,
        which ``messages-tuple`` sends as ``messages`` events, and the answer would come whole
        at the end rather than streaming."""
        return self.server.client().runs.join_stream(self.session_id, run_id, last_event_id="0")

    async def ask_session(self, ask: str, **fields: str) -> dict[str, Any]:
        """The server's answer about this session (``ask_server``)."""
        return await ask_server(self.server, ask, session_id=self.session_id, **fields)

    async def served_model(self) -> ServedModel:
        """The model this session's runs answer with on the server (``served_model``)."""
        return await served_model(self.server, self.context)

    async def usage(self) -> tuple[list[UsageRow], Limits]:
        """What the session spent on the server, by model and agent, as the server's session
        store holds it, and the limits its runs are held to there (this client's, else the
        server's): what ``/cost`` and ``/budget`` show."""
        from dcode.agent.budget import Limits, UsageRow

        context = self.run_context()
        answer = await self.ask_session(
            "usage", **{key: value for key, value in context.items() if key.startswith("budget_")}
        )
        rows = [UsageRow(**row) for row in answer.get("rows") or [] if isinstance(row, dict)]
        found = answer.get("limits")
        limits: dict[str, Any] = found if isinstance(found, dict) else {}
        return rows, Limits(limits.get("usd"), limits.get("tokens"))

    async def end_session(self, reason: str) -> list[Event]:
        """Fire ``SessionEnd`` (``reason`` as ``SessionRunner.end_session``'s) on the server,
        where the session's hooks run, for a session whose turns this client ran; returns the
        hooks' events (nothing when none ran). A failure is a notice: the client ends anyway."""
        if not self.started:
            return []
        try:
            answer = await self.ask_session("end", reason=reason)
        except RemoteFailure as exc:  # the client ends anyway
            return [Notice(f"the server's SessionEnd hooks did not run: {exc}")]
        found = answer.get("events")
        return [e for e in map(event_of, found if isinstance(found, list) else []) if e is not None]

    async def now(self) -> ThreadNow:
        """What a client opening the thread joins (``client.opened_thread``)."""
        return ThreadNow.of(*await asyncio.to_thread(opened_thread, self.server, self.session_id))

    async def follow(
        self,
        parts: AsyncIterator[Any],
        translator: StreamTranslator,
        interrupt: TurnInterrupt | None,
        run: _Run,
        *,
        seen: frozenset[str] = frozenset(),
    ) -> AsyncIterator[Event]:
        """A run's stream parts as typed events; ``seen``: the ids of messages already shown
        (an attach's history), whose chunks and updates are not shown again."""
        stream = aiter(parts)
        try:
            while interrupt is None or not interrupt.requested:
                step = anext(stream, None)
                part = await (interrupt.guard(step) if interrupt is not None else step)
                if part is None:
                    return
                for event in self.translate(part, translator, run, seen):
                    yield event
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()  # the connection goes back now, not when it is collected

    def translate(
        self, part: Any, translator: StreamTranslator, run: _Run, seen: frozenset[str]
    ) -> list[Event]:
        """One stream part of a run as the events the embedded runner gives for it; a call
        refused on the server is kept among the client's denials, as the embedded run keeps
        it (``-p``'s ``permission_denials``, ``/permissions``)."""
        events = self._translate(part, translator, run, seen)
        for event in events:
            if isinstance(event, ToolCallRunning):
                self._running_args[event.call_id] = event.args
            elif isinstance(event, ToolCallFinished) and event.result.status is ToolStatus.DENIED:
                args = self._running_args.pop(event.call_id, {})
                reason = event.result.text.removeprefix(DENIED_PREFIX)
                self.policy.denials.append(Denial(event.name, event.call_id, dict(args), reason))
        return events

    def _translate(
        self, part: Any, translator: StreamTranslator, run: _Run, seen: frozenset[str]
    ) -> list[Event]:
        kind, data = part.event, part.data
        if kind == "metadata" and isinstance(data, dict) and data.get("run_id"):
            run.run_id = str(data["run_id"])
        elif kind == "error":
            detail = data.get("message") or data.get("error") if isinstance(data, dict) else data
            if isinstance(data, dict) and data.get("error") == BUDGET_REACHED and detail:
                # The session's budget: the embedded runner's own line.
                run.error, run.exceeded = str(detail), True
                return [ErrorEvent(run.error, kind="budget")]
            run.error = f"the server's run failed: {detail}"
            return [ErrorEvent(run.error, kind="server")]
        elif kind.startswith("messages") and isinstance(data, list) and len(data) == 2:
            chunk = message_of(data[0])
            if chunk is not None and (chunk.id or "") not in seen:
                return list(translator.on_stream("messages", (chunk, data[1] or {})))
        elif kind.startswith("updates") and isinstance(data, dict):
            run.interrupts.extend(i for i in data.get("__interrupt__") or () if isinstance(i, dict))
            update = update_of(data)
            for node in update.values():
                node["messages"] = [m for m in node["messages"] if (m.id or "") not in seen]
            return list(translator.on_stream("updates", update))
        elif kind.startswith("custom"):
            event = event_of(data)
            if isinstance(event, ErrorEvent) and event.kind == "hook_blocked":
                run.error = event.message  # the prompt was refused: the turn's error, as here
            if event is not None and getattr(event, "call_id", None) not in seen:
                return list(translator.on_stream("custom", event))
        return []

    async def _answer(self, interrupts: list[dict[str, Any]]) -> object:
        """The resume value for the interrupts a run ended on, from the front end's approver:
        one answer, or one per interrupt by its id when several calls asked at once."""
        answers: dict[str, object] = {}
        for item in interrupts:
            request = event_of(item.get("value"))
            if not isinstance(request, ApprovalRequested):
                answers[str(item.get("id"))] = False
                continue
            # A rule to keep would be kept on this machine, and the server's runs would never
            # read it: the question offers none (the session's "allow" goes with the answer).
            decision = await self.approver.decide(replace(request, suggestion=""))
            if decision.mode is not None:
                self.policy.mode = decision.mode  # the next runs go on in the mode chosen
            answers[str(item.get("id"))] = resume_value(decision)
        return next(iter(answers.values())) if len(answers) == 1 else answers

    async def start_background(self, content: str | list[dict[str, Any]], prompt: str) -> str:
        """Start a turn that runs on without this client (``--detach``); returns its run's id.
        Its stream is kept, for ``attach`` to follow from its first event."""
        await self._ensure_thread(prompt)
        self._settled = False
        run = await self.server.client().runs.create(
            self.session_id,
            ASSISTANT_ID,
            input={"messages": [{"role": "user", "content": content}]},
            context=await self._prompt_context(content),
            stream_mode=STREAM_MODES,
            stream_resumable=True,
        )
        return str(run["run_id"])

    async def _prompt_context(self, content: object) -> dict[str, object]:
        """The context of the run that sends a prompt: the client's, and the images the
        prompt names, carried to the server's attachment store (``dcode.server.carried``)."""
        context: dict[str, object] = dict(self.run_context())
        if self.attachments is not None and isinstance(content, list):
            carried = await asyncio.to_thread(carry, content, self.attachments)
            if carried:
                context[CARRIED_KEY] = await upload(self.server.client(), carried)
        return context

    async def _ensure_thread(self, prompt: str) -> None:
        self.started = self._exists
        if self._exists:
            return
        await self.server.client().threads.create(
            thread_id=self.session_id,
            if_exists="do_nothing",
            metadata={"title": " ".join(prompt.split())[:80], "graph_id": ASSISTANT_ID},
        )
        self._exists = self.started = True

    async def _runs_to_cancel(self) -> list[str]:
        """The turn's run; or, when the interrupt came before the server said which run it
        started, the thread's runs that are going."""
        if self._run.run_id:
            return [self._run.run_id]
        client = self.server.client()
        going = []
        for status in ("pending", "running"):
            going += await client.runs.list(self.session_id, status=status)
        return [str(run["run_id"]) for run in going]

    async def _close_open_calls(self, history: list[BaseMessage] | None = None) -> None:
        """Answer the calls of the thread left without results as cancelled (as the embedded
        runner does before each turn and after an interrupt); ``history``: the thread's
        messages when they were just read."""
        missing = dangling_tool_calls(await self.messages() if history is None else history)
        if not missing:
            return
        fields = message_fields(
            ToolResult(
                "cancelled: the user interrupted this call before it finished",
                status=ToolStatus.CANCELLED,
            )
        )
        results = [
            _wire(ToolMessage(**fields, tool_call_id=call_id, name=name))
            for call_id, name in missing
        ]
        await self.server.client().threads.update_state(
            self.session_id, {"messages": results}, as_node="tools"
        )

    async def _settle(self, partial_text: str) -> str:
        """After an interrupt: cancel the run on the server, keep the partial answer and close
        the calls left open. Returns what could not be done, or ""."""
        client = self.server.client()
        try:
            for run_id in await self._runs_to_cancel():
                await client.runs.cancel(self.session_id, run_id, wait=True)
            if partial_text.strip():
                kept = AIMessage(content=partial_text, additional_kwargs={CANCELLED_MARKER: True})
                await client.threads.update_state(
                    self.session_id, {"messages": [_wire(kept)]}, as_node="model"
                )
            await self._close_open_calls()
        except Exception as exc:  # noqa: BLE001 - one line; the session goes on
            return f"could not settle the interrupted turn on the server: {failure_line(exc, self.server.url)}"
        return ""


def messages_of(state: object) -> list[BaseMessage]:
    """The messages of a thread's state as the server gives it."""
    values = state.get("values") if isinstance(state, dict) else None
    raw = values.get("messages", []) if isinstance(values, dict) else []
    return [m for m in map(message_of, raw) if m is not None]


def _wire(message: BaseMessage) -> dict[str, Any]:
    """A message as the server's API takes it in a state update."""
    data: dict[str, Any] = message_to_dict(message)["data"]
    return {**data, "type": message.type}


def seen_in(history: Sequence[BaseMessage]) -> frozenset[str]:
    """What a join leaves out of a run's stream, ``history`` having shown it: its messages'
    ids, and the ids of the calls it has the results of."""
    return frozenset(
        [m.id for m in history if m.id]
        + [m.tool_call_id for m in history if isinstance(m, ToolMessage)]
    )


def _waiting(state: Any) -> list[dict[str, Any]]:
    """The questions a thread's state says it waits on."""
    found = state.get("interrupts") if isinstance(state, dict) else None
    return [i for i in found or () if isinstance(i, dict)]


def _text(content: Any) -> str:
    """A message's text, its blocks' text joined."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )


async def follow_run(
    runner: RemoteRunner, run_id: str, history: Sequence[BaseMessage]
) -> AsyncIterator[Event]:
    """The live run ``run_id`` of the runner's thread, from its first event, as typed events,
    leaving out what ``history`` (the thread's messages, read just before) already holds, for
    a client that only watches (``dcode attach``)."""
    parts = runner.joined_stream(run_id)
    translator = StreamTranslator(runner.max_input_tokens)
    async for event in runner.follow(parts, translator, None, _Run(), seen=seen_in(history)):
        yield event
