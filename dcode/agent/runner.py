"""The session runner: one turn of the graph in, one typed event stream out.

Both the TUI and headless mode consume ``run_turn``. The runner also keeps the thread
consistent whatever happens to a turn: a cancelled or killed turn leaves tool calls without
results, and the next turn would be rejected by the provider, so dangling calls are answered
with a "cancelled" result before each turn and after an interrupt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from dcode.agent.approval import ApprovalPolicy, Approver
from dcode.agent.events import ErrorEvent, Event, Notice, TurnFinished, TurnStarted
from dcode.agent.middleware.summarization import CompactionFailed, read_compaction
from dcode.agent.run_context import RunContext
from dcode.agent.stream import CANCELLED_MARKER, StreamTranslator, message_text
from dcode.models.errors import describe_model_error

if TYPE_CHECKING:
    from dcode.agent.engine import Engine

RECURSION_LIMIT = 10_000
log = logging.getLogger(__name__)
_DONE = object()


class SessionRunner:
    def __init__(self, engine: Engine, session_id: str, approver: Approver, policy: ApprovalPolicy) -> None:
        self.engine = engine
        self.session_id = session_id
        self.approver = approver
        self.policy = policy
        self._task: asyncio.Task[None] | None = None

    @property
    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.session_id}, "recursion_limit": RECURSION_LIMIT}

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    async def messages(self) -> list[BaseMessage]:
        """The thread's whole history, for painting a resumed transcript."""
        snapshot = await self.engine.graph.aget_state(self.config)
        return list(snapshot.values.get("messages", [])) if snapshot and snapshot.values else []

    async def add_user_note(self, text: str) -> None:
        """Put text into the thread as a user message without running the model (``!cmd``)."""
        await self._repair_dangling_calls()
        await self.engine.graph.aupdate_state(self.config, {"messages": [HumanMessage(content=text)]}, as_node="model")

    async def compact(self) -> list[Event]:
        """Compact the thread now, whatever its size (``/offload``): the older messages are
        summarized and archived as the window's own compaction would, and later requests carry
        the summary. Returns what happened, as events (a notice when there is nothing to do)."""
        if self.busy:
            raise RuntimeError("a turn is running in this session")
        snapshot = await self.engine.graph.aget_state(self.config)
        values = snapshot.values if snapshot and snapshot.values else {}
        events: list[Event] = []
        try:
            event = await self.engine.compactor.compact(
                list(values.get("messages", [])), read_compaction(values), session_id=self.session_id, emit=events.append, force=True
            )
        except CompactionFailed:
            return events  # the notice says why
        if event is None:
            return [Notice("nothing to compact yet: the conversation is all recent")]
        await self.engine.graph.aupdate_state(self.config, {"compaction": event}, as_node="model")
        return events

    def cancel(self) -> bool:
        """Interrupt the running turn; ``run_turn`` then finishes with ``interrupted=True``."""
        if not self.busy:
            return False
        assert self._task is not None
        self._task.cancel()
        return True

    async def run_turn(self, content: str | list[dict[str, Any]], *, prompt_text: str | None = None) -> AsyncIterator[Event]:
        if self.busy:
            raise RuntimeError("a turn is already running in this session")
        queue: asyncio.Queue[Any] = asyncio.Queue()
        text = prompt_text if prompt_text is not None else (content if isinstance(content, str) else "")
        self._task = asyncio.create_task(self._drive(content, text, queue.put_nowait))
        try:
            while (event := await queue.get()) is not _DONE:
                yield event
        finally:
            if self.busy:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)

    async def _drive(self, content: str | list[dict[str, Any]], prompt: str, emit: Any) -> None:
        started = time.monotonic()
        info = self.engine.sessions.get(self.session_id)
        session_tokens = (info.input_tokens, info.output_tokens) if info else (0, 0)
        translator = StreamTranslator(self.engine.resolved.profile.max_input_tokens, session_tokens)
        context = RunContext(self.approver, self.policy, self.engine.backend, emit)
        error, interrupted = "", False
        emit(TurnStarted(self.session_id, prompt))
        try:
            await self._repair_dangling_calls()
            inputs = {"messages": [HumanMessage(content=content)]}
            async for mode, data in self.engine.graph.astream(
                inputs,
                self.config,
                context=context,
                stream_mode=["messages", "updates"],
                durability="sync",
            ):
                events = translator.on_chunk(*data) if mode == "messages" else translator.on_update(data)
                for event in events:
                    emit(event)
        except asyncio.CancelledError:
            interrupted = True
            await self._settle_after_interrupt(translator.tally.partial_text)
            emit(Notice("interrupted: the partial answer was kept"))
        except ModelCallLimitExceededError:
            error = f"stopped after {translator.tally.num_turns} model turns (--max-turns {self.engine.settings.max_turns})"
            emit(ErrorEvent(error, kind="max_turns"))
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line for the user
            log.debug("turn failed", exc_info=True)
            error = describe_model_error(exc, self.engine.resolved.endpoint.base_url)
            emit(ErrorEvent(error, kind=type(exc).__name__))
        tally = translator.tally
        count = await self._message_count()
        await asyncio.to_thread(
            self.engine.sessions.record_turn,
            self.session_id,
            prompt=prompt,
            model=self.engine.resolved.spec,
            message_count=count,
            input_tokens=tally.input_tokens,
            output_tokens=tally.output_tokens,
            context_tokens=tally.context_tokens,
        )
        emit(
            TurnFinished(
                session_id=self.session_id,
                result=tally.last_text if not error else error,
                is_error=bool(error),
                num_turns=tally.num_turns,
                input_tokens=tally.input_tokens,
                output_tokens=tally.output_tokens,
                duration_ms=int((time.monotonic() - started) * 1000),
                interrupted=interrupted,
                error=error,
            )
        )
        emit(_DONE)

    async def _message_count(self) -> int:
        try:
            return len(await self.messages())
        except Exception:  # noqa: BLE001 - a count is not worth failing a turn
            return 0

    async def _settle_after_interrupt(self, partial_text: str) -> None:
        """Keep the partial answer in the thread, then close any calls left without results."""
        if partial_text.strip():
            await self.engine.graph.aupdate_state(
                self.config,
                {"messages": [AIMessage(content=partial_text, additional_kwargs={CANCELLED_MARKER: True})]},
                as_node="model",
            )
        await self._repair_dangling_calls()

    async def _repair_dangling_calls(self) -> None:
        messages = await self.messages()
        missing = dangling_tool_calls(messages)
        if not missing:
            return
        results = [
            ToolMessage(
                content="cancelled: the user interrupted this call before it finished",
                tool_call_id=call_id,
                name=name,
                status="error",
                additional_kwargs={CANCELLED_MARKER: True},
            )
            for call_id, name in missing
        ]
        await self.engine.graph.aupdate_state(self.config, {"messages": results}, as_node="tools")


def dangling_tool_calls(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    missing: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, AIMessage):
            missing.extend((c["id"], c["name"]) for c in message.tool_calls if c["id"] and c["id"] not in answered)
    return missing


__all__ = ["SessionRunner", "dangling_tool_calls", "message_text"]
