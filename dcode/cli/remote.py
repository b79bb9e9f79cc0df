"""The command line on a dcode server: ``-p --server``, ``--detach``, ``sessions list --server``
and ``attach``.

``-p`` runs its turn through the remote engine (``dcode.server.remote``) and prints it as it
prints a local one (``turn_report.print_turn``). ``--detach`` starts the run in the background and
prints its session. ``attach`` prints a thread's history as ``sessions show`` prints a
transcript, then follows the thread's live run from its first event, leaving out what the
history already showed: nothing is lost, nothing is shown twice. Each failure of the server (down,
a refused token, no such thread) is one line.
"""

# Any: the server's JSON is untyped

from __future__ import annotations

import json
import uuid
from typing import IO, TYPE_CHECKING, Any

from dcode.cli.run_request import HeadlessRequest, OutputFormat
from dcode.cli.turn_report import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    print_session_end,
    print_turn,
    report,
    say,
)
from dcode.server.client import (
    RemoteFailure,
    RemoteServer,
    failure_line,
    latest_thread,
    opened_thread,
    pick_thread,
)
from dcode.settings.config import ApprovalMode, Settings
from dcode.terminal_text import for_stream, json_safe

if TYPE_CHECKING:
    from dcode.agent.decisions import ApprovalDecision
    from dcode.agent.events import ApprovalRequested, Event
    from dcode.server.remote import RemoteRunner


async def run_remote(
    settings: Settings, request: HeadlessRequest, *, out: IO[str], err: IO[str]
) -> int:
    """``dcode -p --server URL``: the turn runs on the server, printed as a local one."""
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.events import SessionInit
    from dcode.media.store import AttachmentStore
    from dcode.server.remote import RemoteRunner

    mode = settings.approve or ApprovalMode.EDITS
    server = RemoteServer.from_env(request.server)
    try:
        session_id = await pick_thread(
            server, request.resume_id, latest=request.resume_latest or request.continue_here
        )
    except RemoteFailure as exc:
        say(err, f"dcode: error: {exc}")
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - the server's failure, in one line
        say(err, f"dcode: error: {failure_line(exc, server.url)}")
        return EXIT_FAILED
    context = dict(request.server_context)
    runner = RemoteRunner(
        server,
        session_id or str(uuid.uuid4()),
        HeadlessApprover(),
        mode,
        context=context,
        exists=session_id is not None,
        attachments=AttachmentStore(settings.attachments_dir),
    )
    content: str | list[dict[str, object]] = request.content or request.prompt
    if request.detach:
        return await _detach(runner, content, request, out=out, err=err)
    if request.output_format is OutputFormat.STREAM_JSON:
        model, where = await _model(runner)
        init = SessionInit(runner.session_id, model, where or server.url, mode.value, ())
        print(json_safe(json.dumps(init.to_json(), ensure_ascii=False)), file=out, flush=True)
    finished, shown_plan, damaged = await print_turn(
        runner.run_turn(content, prompt_text=request.prompt), request, out=out, err=err
    )
    print_session_end(await runner.end_session("other"), request, out=out, err=err)
    return report(finished, shown_plan, damaged, mode, runner.policy.denials, request, out=out)


async def _model(runner: RemoteRunner) -> tuple[str, str]:
    """The model that answers the run, as the server names it (its own unless ``-m`` names
    another), and the server's workspace, where the run works; what ``-m`` asked for and no
    workspace when the server cannot say (the turn then says why)."""
    try:
        served = await runner.served_model()
    except RemoteFailure:
        return runner.context.get("model", ""), ""
    return served.spec, served.workspace


async def _detach(
    runner: RemoteRunner,
    content: str | list[dict[str, object]],
    request: HeadlessRequest,
    *,
    out: IO[str],
    err: IO[str],
) -> int:
    """Start the turn in the background; print its session (``dcode attach ID`` follows it)."""
    try:
        run_id = await runner.start_background(content, request.prompt)
    except Exception as exc:  # noqa: BLE001 - the server's failure, in one line
        say(err, f"dcode: error: {failure_line(exc, runner.server.url)}")
        return EXIT_FAILED
    if request.output_format is OutputFormat.TEXT:
        print(runner.session_id, file=out, flush=True)
    else:
        started = {"type": "detached", "session_id": runner.session_id, "run_id": run_id}
        print(json.dumps(started), file=out, flush=True)
    return EXIT_OK


async def list_threads(server: RemoteServer, *, limit: int = 50) -> str:
    """The server's threads, newest first, as ``sessions list`` shows local sessions."""
    import datetime

    found = await server.client().threads.search(
        limit=limit, sort_by="updated_at", sort_order="desc"
    )
    if not found:
        return f"No sessions on {server.url} yet."
    # Whole ids (``-r ID --server`` and ``attach`` take a thread's whole id), in a column as
    # wide as the longest: a server may name its threads otherwise than with a UUID.
    width = max(36, *(len(str(thread["thread_id"])) for thread in found))
    lines = [f"{'ID':<{width}}  {'STATUS':<11}  {'UPDATED':<16}  TITLE"]
    for thread in found:
        updated = str(thread.get("updated_at") or "")
        try:
            when = datetime.datetime.fromisoformat(updated).astimezone().strftime("%Y-%m-%d %H:%M")
        except ValueError:
            when = updated[:16]
        title = (thread.get("metadata") or {}).get("title") or "(untitled)"
        lines.append(
            f"{thread['thread_id']!s:<{width}}  {thread.get('status', ''):<11}  {when:<16}  {title}"
        )
    return "\n".join(lines)


async def attach(server: RemoteServer, thread: str | None, *, out: IO[str]) -> int:
    """Print ``thread``'s history (the newest thread's without one), then follow its live run
    to its end. Raises the server's failures (the caller says them in one line)."""
    import asyncio

    thread = thread or await latest_thread(server)
    # The reads go on while the code that shows what they read loads (LangChain's messages
    # and dcode's events: most of the time to the first line).
    reading = asyncio.get_running_loop().run_in_executor(None, opened_thread, server, thread)
    from dcode.server.remote import RemoteRunner, ThreadNow, follow_run

    runner = RemoteRunner(server, thread, _Watching(), ApprovalMode.MANUAL, exists=True)
    now = ThreadNow.of(*await reading)
    for event in _history(now.messages, live=now.running is not None):
        _show(event, out)
    waiting = now.waiting
    if now.running is not None:
        async for event in follow_run(runner, now.running, now.messages):
            _show(event, out)
        waiting = (await runner.state()).get("interrupts") or []
    for question in waiting:
        value = question.get("value") or {}
        say(
            out,
            f"[waiting] approval of {value.get('summary') or value.get('tool')}: "
            f"answer it with dcode -r {thread} --server {server.url}",
        )
    return EXIT_OK


def _history(messages: list[Any], *, live: bool) -> list[Event]:
    """The history's events; with a run going on, a call without a result is still running."""
    from dcode.agent.saved_thread import replay

    return list(replay(messages, live=live))


def _show(event: Event, out: IO[str]) -> None:
    from dcode.agent.events import TurnStarted
    from dcode.cli.sessions import event_text

    text = f"[you] {event.prompt}" if isinstance(event, TurnStarted) else event_text(event)
    if text is not None:
        print(for_stream(text, out), file=out, flush=True)


class _Watching:
    """The approver of an attach, which only watches: a question of the run is answered by the
    client that runs it (``attach`` says where one waits), never from here."""

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        from dcode.agent.decisions import ApprovalDecision

        return ApprovalDecision(False, "an attached viewer does not answer approvals")
