"""``dcode -p``: one task, no screen, the same event stream as the TUI.

Output formats: ``text`` prints the final answer; ``json`` prints one result object;
``stream-json`` prints the ``init`` event (the tools, each MCP server's state), every event of
the turn as a JSON line, and then the result object. With ``--approve plan`` nothing is changed:
the turn ends when the model presents its plan (an ``approval_requested`` event of kind
``plan``), which ``text`` prints instead of the answer, and the result object carries as
``plan`` (null when the model ended without one). Failures are one line on stderr, and so is
each MCP server that did not start, whatever the format. The answer and those lines go to a pipe
byte for byte, and to a terminal made safe (``terminal_text``): the model's text does not drive
the terminal. JSON escapes every control character either way. Exit codes: 0 success, 1 the task failed, 2 a usage or configuration error (a
session another dcode has open, an unusable session store included), 128 + N when signal N
(SIGTERM, SIGINT, SIGHUP) stopped the run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import IO, TYPE_CHECKING

from dcode.cli.run_request import HeadlessRequest, OutputFormat, pick_session
from dcode.mcp.state import LinkState
from dcode.settings.config import ApprovalMode, ConfigError, Settings

if TYPE_CHECKING:
    from dcode.agent.approval import Denial
    from dcode.agent.engine import Engine
    from dcode.agent.events import Event, SessionInit, TurnFinished
from dcode.terminal_text import for_stream, json_safe

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
HELD_ADVICE = "wait for it to finish, or leave out -r/-c to start a new session"


def say(stream: IO[str], line: str) -> None:
    """A ``dcode: error:``/``note:`` line: it may quote a server or a tool, so on a terminal
    it is made safe first (``terminal_text``)."""
    print(for_stream(line, stream), file=stream, flush=True)


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


def server_warnings(init: SessionInit) -> list[str]:
    """One line for each MCP server of ``init`` that is not connected."""
    lines = []
    for server in init.mcp_servers:
        match server.status:
            case LinkState.FAILED:
                lines.append(f"dcode: warning: MCP server {server.name} failed: {server.error}")
            case LinkState.NEEDS_LOGIN:
                lines.append(
                    f"dcode: warning: MCP server {server.name} needs a login: {server.error}"
                )
    return lines


async def run_headless(
    settings: Settings, request: HeadlessRequest, *, out: IO[str], err: IO[str]
) -> int:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import Notice
    from dcode.agent.session_init import session_init
    from dcode.mcp.plan import plan, skipped_warning
    from dcode.models.factory import resolve_model
    from dcode.models.media_support import MediaSupport
    from dcode.settings.hook_sources import skipped_line

    if request.server:
        from dcode.cli.remote import run_remote

        return await run_remote(settings, request, out=out, err=err)
    session_id = pick_session(settings, request)
    resolved = resolve_model(settings)
    mode = settings.approve or ApprovalMode.EDITS
    servers = plan(settings)
    unseen = MediaSupport(resolved.spec, resolved.profile, settings.user_config).unseen_in(
        request.content or ()
    )
    hooks_skipped = skipped_line(settings.skipped_hooks)
    for line in (
        *(f"dcode: warning: {p}" for p in (*unseen, *servers.problems)),
        skipped_warning(servers),
        f"dcode: warning: {hooks_skipped}" if hooks_skipped else None,
    ):
        if line:
            say(err, line)
    async with await Engine.open(settings, resolved) as engine:
        engine.start_mcp(servers.start)
        expanded = await _mcp_prompt(engine, request, err)
        if expanded is None:
            return EXIT_USAGE
        request = expanded
        for problem in engine.rule_problems:
            say(err, f"dcode: warning: {problem}")
        runner = engine.runner(HeadlessApprover(), session_id=session_id, mode=mode)
        init = await session_init(engine, runner.session_id, mode)
        for line in server_warnings(init):
            say(err, line)
        if request.output_format is OutputFormat.STREAM_JSON:
            print(json_safe(json.dumps(init.to_json(), ensure_ascii=False)), file=out, flush=True)
        content: str | list[dict[str, object]] = request.content or request.prompt
        finished, shown_plan, damaged = await print_turn(
            runner.run_turn(content, prompt_text=request.prompt, attached=request.attached),
            request,
            out=out,
            err=err,
        )
        for event in await runner.end_session("other"):
            if request.output_format is OutputFormat.STREAM_JSON:
                print(json_safe(json.dumps(event.to_json(), default=str)), file=out, flush=True)
            elif isinstance(event, Notice):
                say(err, f"dcode: note: {event.message}")
    return report(finished, shown_plan, damaged, mode, runner.policy.denials, request, out=out)


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


async def _mcp_prompt(
    engine: Engine, request: HeadlessRequest, err: IO[str]
) -> HeadlessRequest | None:
    """``/mcp__server__prompt args`` as the prompt the server makes of it; None (and one line
    on stderr) when it cannot be made."""
    from dcode.mcp.names import is_prompt_command

    if request.content or not is_prompt_command(request.prompt):
        return request
    from dcode.mcp.prompts import PromptError

    try:
        return replace(request, prompt=await engine.mcp.expand_prompt(request.prompt))
    except PromptError as exc:
        say(err, f"dcode: error: {exc}")  # the server's own words
        return None


async def _run_until_signal(settings: Settings, request: HeadlessRequest) -> int:
    """``run_headless``, cancelled (so the session is settled and closed) by an exit signal."""
    from dcode.processes.exit_signals import ExitSignals, exit_code, signal_name

    task = asyncio.current_task()
    assert task is not None
    signals = ExitSignals(lambda _signum: task.cancel())
    signals.install()
    try:
        return await run_headless(settings, request, out=sys.stdout, err=sys.stderr)
    except asyncio.CancelledError:
        if signals.received is None:
            raise
        print(f"dcode: stopped by {signal_name(signals.received)}", file=sys.stderr)
        return exit_code(signals.received)
    finally:
        signals.uninstall()


def main_headless(settings: Settings, request: HeadlessRequest, *, debug: bool = False) -> int:
    from dcode.library_logs import route_library_logs

    route_library_logs(debug=debug)  # the error line says what failed, not a library's log
    from dcode.agent.store.base import SessionDatabaseError, SessionHeld

    try:
        return asyncio.run(_run_until_signal(settings, request))
    except (ConfigError, SessionDatabaseError) as exc:
        say(sys.stderr, f"dcode: error: {exc}")
        return EXIT_USAGE
    except SessionHeld as exc:
        say(sys.stderr, f"dcode: error: {exc}: {HELD_ADVICE}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dcode: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a traceback is for --debug only
        if debug:
            raise
        from dcode.models.errors import describe_model_error

        say(sys.stderr, f"dcode: error: {describe_model_error(exc)}")  # it may quote the server
        return EXIT_FAILED
