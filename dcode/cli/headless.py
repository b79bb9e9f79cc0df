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
from dataclasses import replace
from typing import IO, TYPE_CHECKING

from dcode.cli.run_request import HeadlessRequest, OutputFormat, pick_session
from dcode.cli.turn_report import (
    EXIT_FAILED,
    EXIT_USAGE,
    print_session_end,
    print_turn,
    report,
    say,
)
from dcode.mcp.state import LinkState
from dcode.settings.config import ApprovalMode, ConfigError, Settings

if TYPE_CHECKING:
    from dcode.agent.engine import Engine
    from dcode.agent.events import SessionInit
from dcode.terminal_text import json_safe

HELD_ADVICE = "wait for it to finish, or leave out -r/-c to start a new session"


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
        print_session_end(await runner.end_session("other"), request, out=out, err=err)
    return report(finished, shown_plan, damaged, mode, runner.policy.denials, request, out=out)


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
