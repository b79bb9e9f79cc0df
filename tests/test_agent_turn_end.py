"""A turn always ends with ``TurnFinished``, whatever fails on its way: the real graph, the
real SQLite checkpointer and the scripted model server, with one failure injected each time.

Every turn is consumed under ``asyncio.wait_for`` with a generous bound, so a turn that never
ends fails its test instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from dcode.agent.approval import ApprovalDecision, HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import (
    ApprovalRequested,
    ApprovalResolved,
    ErrorEvent,
    Event,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallRunning,
    TurnFinished,
)
from dcode.agent.markers import CANCELLED_MARKER
from dcode.agent.stream import StreamTranslator
from dcode.settings.config import ApprovalMode
from tests.support.model_server import reply, tool_call

BOUND = 60.0  # seconds; far beyond any of these turns, short of a hung suite
LONG = " ".join(f"word{n}" for n in range(300))


def slow() -> object:
    return reply(LONG, chunk_size=4, chunk_delay=0.02)


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return await asyncio.wait_for(_collect(events), BOUND)


async def _collect(events: AsyncIterator[Event]) -> list[Event]:
    collected = [event async for event in events]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0, (
        "an interrupt left the consuming task cancelled"
    )
    return collected


async def until_text(events: AsyncIterator[Event]) -> list[Event]:
    """The events up to the first streamed text, so that the turn is mid-answer."""

    async def read() -> list[Event]:
        seen = []
        async for event in events:
            seen.append(event)
            if isinstance(event, TextDelta):
                return seen
        raise AssertionError("the turn ended before any text streamed")

    return await asyncio.wait_for(read(), BOUND)


def broken_record(session_id: str, **figures: Any) -> None:
    raise sqlite3.OperationalError("disk I/O error")


def fail_checkpoint_writes(db_path: Path) -> None:
    """From now on every new checkpoint is refused by the database itself, as a full disk
    would; the statement's transaction is rolled back, so no lock is left behind."""
    conn = sqlite3.connect(db_path)
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END"
    )
    conn.commit()
    conn.close()


async def test_a_failing_session_record_still_ends_the_turn(
    server, make_settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(reply("the answer"))
    async with await Engine.open(make_settings()) as engine:
        monkeypatch.setattr(engine.store, "record_turn", broken_record)
        runner = engine.runner(HeadlessApprover())
        events = await drain(runner.run_turn("hello"))
        assert not runner.busy
    finished = events[-1]
    assert (
        isinstance(finished, TurnFinished)
        and finished.is_error
        and "disk I/O error" in finished.error
    )
    assert [e.message for e in events if isinstance(e, ErrorEvent)] == [finished.error]
    assert "could not record the turn" in finished.error


async def test_a_failing_checkpoint_write_ends_the_turn_with_an_error(
    server, make_settings
) -> None:
    server.script(reply("never saved"))
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        fail_checkpoint_writes(settings.sessions_db)
        events = await drain(runner.run_turn("hello"))
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.is_error and "full" in finished.error


async def test_a_checkpoint_write_failing_while_an_interrupt_settles_still_ends_the_turn(
    server, make_settings
) -> None:
    server.script(slow())
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        events = runner.run_turn("write a lot")
        await until_text(events)
        fail_checkpoint_writes(settings.sessions_db)  # the partial answer cannot be kept
        assert runner.cancel()
        rest = await drain(events)
    finished = rest[-1]
    assert isinstance(finished, TurnFinished) and finished.interrupted
    assert finished.is_error and "could not save the interrupted turn" in finished.error


async def test_a_second_cancel_while_the_interrupt_settles_changes_nothing(
    server, make_settings
) -> None:
    server.script(slow(), reply("next"))
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        settling = asyncio.Event()
        update_state = engine.graph.aupdate_state

        async def watched_update_state(*args: Any, **kwargs: Any) -> Any:
            settling.set()
            return await update_state(*args, **kwargs)

        engine.graph.aupdate_state = watched_update_state
        events = runner.run_turn("write a lot")
        streamed = "".join(e.text for e in await until_text(events) if isinstance(e, TextDelta))
        # Another connection holds the write lock, so saving the partial answer waits.
        blocker = sqlite3.connect(settings.sessions_db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        assert runner.cancel()
        rest = asyncio.ensure_future(drain(events))
        try:
            await asyncio.wait_for(settling.wait(), BOUND)
            assert runner.cancel()  # Esc again, while the partial answer is being saved
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        rest_events = await rest
        finished = rest_events[-1]
        assert isinstance(finished, TurnFinished) and finished.interrupted and not finished.is_error
        assert not any(isinstance(e, Notice) for e in rest_events)  # TurnFinished is the one signal
        kept = [m for m in await runner.messages() if isinstance(m, AIMessage)]
        assert kept[-1].additional_kwargs.get(CANCELLED_MARKER) and str(
            kept[-1].content
        ).startswith(streamed)
        assert isinstance((await drain(runner.run_turn("go on")))[-1], TurnFinished)


async def test_an_error_in_the_translation_ends_the_turn(
    server, make_settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: StreamTranslator, update: Any) -> Any:
        raise ValueError("cannot read this update")

    monkeypatch.setattr(StreamTranslator, "on_update", broken)
    server.script(reply("fine"))
    async with await Engine.open(make_settings()) as engine:
        events = await drain(engine.runner(HeadlessApprover()).run_turn("hello"))
    finished = events[-1]
    assert (
        isinstance(finished, TurnFinished)
        and finished.is_error
        and "cannot read this update" in finished.error
    )


async def test_a_cancel_while_the_consumer_is_busy_lands_at_the_next_step(
    server, make_settings
) -> None:
    """The interrupt never raises in the consumer's own code: it takes effect when the
    consumer asks for the next event."""
    server.script(slow())
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        seen: list[Event] = []

        async def consume() -> None:
            async for event in runner.run_turn("write a lot"):
                seen.append(event)
                if isinstance(event, TextDelta) and runner.cancel():
                    await asyncio.sleep(
                        0.05
                    )  # the consumer's own wait, which must not be cut short

        await asyncio.wait_for(consume(), BOUND)
    assert isinstance(seen[-1], TurnFinished) and seen[-1].interrupted


async def test_leaving_a_turn_early_frees_the_session(server, make_settings) -> None:
    server.script(slow(), reply("second"))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        events = runner.run_turn("write a lot")
        await until_text(events)
        await events.aclose()
        assert not runner.busy
        second = await drain(runner.run_turn("again"))
    assert isinstance(second[-1], TurnFinished) and second[-1].result == "second"


async def test_a_second_turn_while_one_runs_is_refused_and_the_first_goes_on(
    server, make_settings
) -> None:
    server.script(slow())
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        events = runner.run_turn("write a lot")
        await until_text(events)
        with pytest.raises(RuntimeError, match="a turn is already running in this session"):
            await anext(runner.run_turn("again"))
        assert runner.busy
        rest = await drain(events)
    assert isinstance(rest[-1], TurnFinished) and rest[-1].result == LONG


async def test_middleware_events_arrive_on_the_stream_while_the_tool_waits(
    server, make_settings, api: str
) -> None:
    """An approval request reaches the consumer while the middleware is still waiting for the
    answer, in order with the call's other events."""
    server.script(
        reply(tool_calls=[tool_call("write_file", {"file_path": "a.txt", "content": "one\n"})]),
        reply("done"),
    )

    class AnswersWhenSeen:
        def __init__(self) -> None:
            self.answer: asyncio.Future[ApprovalDecision] = (
                asyncio.get_running_loop().create_future()
            )

        async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
            return await self.answer

    approver = AnswersWhenSeen()
    seen: list[Event] = []
    async with await Engine.open(make_settings(api)) as engine:
        runner = engine.runner(approver, mode=ApprovalMode.MANUAL)

        async def consume() -> None:
            async for event in runner.run_turn("write it"):
                seen.append(event)
                if isinstance(event, ApprovalRequested):
                    approver.answer.set_result(ApprovalDecision(True))

        await asyncio.wait_for(consume(), BOUND)
    kinds = [
        type(e)
        for e in seen
        if isinstance(e, (ApprovalRequested, ApprovalResolved, ToolCallFinished))
    ]
    assert kinds == [ApprovalRequested, ApprovalResolved, ToolCallFinished]
    assert isinstance(seen[-1], TurnFinished) and not seen[-1].is_error


async def test_a_turn_after_a_clean_one_reads_the_history_once(server, make_settings) -> None:
    """A turn that ended cleanly leaves nothing to settle: the next one finds the same head and
    reads the thread only to count it at its end. After an interrupt it settles the thread
    first (a call may have been left without its result). The call Esc cut short stays in the
    thread with its cancelled result: its answer lived only in the unfinished step's writes,
    and used to be lost, leaving a result that follows no call (which a real API refuses)."""
    server.script(
        reply("first"),
        reply("second"),
        reply(tool_calls=[tool_call("execute", {"command": "sleep 30"})]),
        reply("after the interrupt"),
    )
    async with await Engine.open(make_settings()) as engine:
        reads: list[object] = []
        read_state = engine.graph.aget_state

        async def counted(*args: Any, **kwargs: Any) -> Any:
            reads.append(args)
            return await read_state(*args, **kwargs)

        engine.graph.aget_state = counted
        runner = engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)
        await drain(runner.run_turn("one"))
        reads.clear()
        await drain(runner.run_turn("two"))
        assert len(reads) == 1  # the count at its end, not the settling at its start
        events = runner.run_turn("three")
        async for event in events:
            if isinstance(event, ToolCallRunning):
                break
        assert runner.cancel()
        await drain(events)
        reads.clear()
        finished = (await drain(runner.run_turn("four")))[-1]
        assert len(reads) == 2  # settled first, then counted
        assert isinstance(finished, TurnFinished) and finished.result == "after the interrupt"
        kinds = [m.type for m in await runner.messages()]
    assert kinds == ["human", "ai", "human", "ai", "human", "ai", "tool", "human", "ai"]
