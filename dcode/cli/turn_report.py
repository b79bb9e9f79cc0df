"""How ``dcode -p`` prints a turn and ends: the events as they come (``stream-json``), errors
and notes on stderr, then the answer or the result object and the exit code. The same for a
turn run here (``headless``) and one run on a dcode server (``remote``)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import IO, TYPE_CHECKING

from dcode.cli.run_request import HeadlessRequest, OutputFormat
from dcode.settings.config import ApprovalMode
from dcode.terminal_text import for_stream, json_safe

if TYPE_CHECKING:
    from dcode.agent.approval import Denial
    from dcode.agent.events import Event, TurnFinished

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def say(stream: IO[str], line: str) -> None:
    """A ``dcode: error:``/``note:`` line: it may quote a server or a tool, so on a terminal
    it is made safe first (``terminal_text``)."""
    print(for_stream(line, stream), file=stream, flush=True)


def print_session_end(
    events: Sequence[Event], request: HeadlessRequest, *, out: IO[str], err: IO[str]
) -> None:
    """The events of the session's ``SessionEnd`` hooks: each on stdout with
    ``--output-format stream-json``, else their notices on stderr."""
    from dcode.agent.events import Notice

    for event in events:
        if request.output_format is OutputFormat.STREAM_JSON:
            print(json_safe(json.dumps(event.to_json(), default=str)), file=out, flush=True)
        elif isinstance(event, Notice):
            say(err, f"dcode: note: {event.message}")


def result_object(
    finished: TurnFinished,
    plan: str | None = None,
    *,
    planning: bool = False,
    denials: list[Denial] | None = None,
) -> dict[str, object]:
    """The ``json`` result; ``planning`` (``--approve plan``) adds ``plan``, and
    ``permission_denials`` lists the calls refused, as Claude Code lists them (tool, call, input)."""
    return {
        "type": "result",
        "result": finished.result,
        "session_id": finished.session_id,
        "is_error": finished.is_error,
        "num_turns": finished.num_turns,
        "usage": {
            "input_tokens": finished.input_tokens,
            "output_tokens": finished.output_tokens,
            "cached_input_tokens": finished.cached_tokens,
        },
        "duration_ms": finished.duration_ms,
        "budget_exceeded": finished.budget_exceeded,
        **({"plan": plan} if planning else {}),
        "permission_denials": [
            {
                "tool_name": d.tool,
                "tool_use_id": d.call_id,
                "tool_input": d.args,
                "reason": d.reason,
            }
            for d in denials or ()
        ],
    }


def presented_plan(event: Event) -> str | None:
    """The plan an event puts to the user (the session's own agent's), or None."""
    from dcode.agent.events import ApprovalKind, ApprovalRequested

    if isinstance(event, ApprovalRequested) and event.kind is ApprovalKind.PLAN and not event.agent:
        plan = event.args.get("plan")
        return plan if isinstance(plan, str) else None
    return None


async def print_turn(
    events: AsyncGenerator[Event, None], request: HeadlessRequest, *, out: IO[str], err: IO[str]
) -> tuple[TurnFinished, str | None, bool]:
    """A turn's events as ``-p`` prints them (``stream-json``: each; errors and notes on
    ``err``); returns how it finished, the plan it presented and whether the store is damaged.
    The same for a turn run here and one run on a dcode server."""
    from dcode.agent.events import ErrorEvent, Notice, TurnFinished
    from dcode.agent.store.base import DAMAGED_DATABASE

    finished: TurnFinished | None = None
    shown_plan: str | None = None
    damaged = False
    async with aclosing(events):
        async for event in events:
            if request.output_format is OutputFormat.STREAM_JSON:
                print(
                    json_safe(json.dumps(event.to_json(), ensure_ascii=False, default=str)),
                    file=out,
                    flush=True,
                )
            shown_plan = presented_plan(event) or shown_plan
            match event:
                case ErrorEvent(message=message, kind=kind):
                    say(err, f"dcode: error: {message}")
                    damaged = damaged or kind == DAMAGED_DATABASE
                case Notice(message=message) if (
                    request.output_format is not OutputFormat.STREAM_JSON
                ):
                    say(err, f"dcode: note: {message}")
                case TurnFinished():
                    finished = event
    assert finished is not None
    return finished, shown_plan, damaged


def report(
    finished: TurnFinished,
    shown_plan: str | None,
    damaged: bool,
    mode: ApprovalMode,
    denials: list[Denial],
    request: HeadlessRequest,
    *,
    out: IO[str],
) -> int:
    """The answer (or the result object) on ``out``, and the exit code."""
    if request.output_format is OutputFormat.TEXT:
        if not finished.is_error:
            print(for_stream(finished.result if shown_plan is None else shown_plan, out), file=out)
    else:
        answer = result_object(
            finished, shown_plan, planning=mode is ApprovalMode.PLAN, denials=denials
        )
        print(json_safe(json.dumps(answer, ensure_ascii=False)), file=out)
    if damaged:
        return EXIT_USAGE  # as when the damage is found before the turn
    if finished.interrupted:
        return EXIT_FAILED
    return EXIT_FAILED if finished.is_error else EXIT_OK
