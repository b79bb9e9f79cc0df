"""``launch_tui``: what ``dcode`` (without ``-p``) runs.

Picking the session and checking that a model is usable take only the standard library, so
they happen before the app starts; langchain is imported by the app's worker after the first
frame. A missing key or model opens the first-run screen rather than failing.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from dcode.settings.config import ApprovalMode, ConfigError, Settings, load_settings
from dcode.terminal_text import for_stream
from dcode.tui.setup_problem import find_setup_problem

if TYPE_CHECKING:
    from dcode.cli.run_request import HeadlessRequest
    from dcode.server.client import RemoteServer

EXIT_OK, EXIT_USAGE = 0, 2


def _reloader(settings: Settings, cli: Mapping[str, object] | None) -> Callable[[], Settings]:
    """Re-resolve config and environment (after the first-run screen, or once the project is
    trusted), with the same command-line flags, so every source keeps its precedence."""

    def reload() -> Settings:
        return load_settings(
            workspace=settings.workspace, cli=cli, default_approve=ApprovalMode.MANUAL
        )

    return reload


def launch_tui(
    settings: Settings,
    *,
    cli: Mapping[str, object] | None = None,
    prompt: str | None = None,
    resume_id: str | None = None,
    resume_latest: bool = False,
    continue_here: bool = False,
    model_given: bool = False,
    server: str | None = None,
) -> int:
    """``server``: the dcode server the sessions run on (``--server``); ``-r ID`` names one of
    its threads then."""
    from dcode.agent.store.base import SessionDatabaseError
    from dcode.cli.run_request import HeadlessRequest, pick_session, session_model

    request = HeadlessRequest(
        prompt=prompt or "",
        resume_id=resume_id,
        resume_latest=resume_latest,
        continue_here=continue_here,
    )
    remote = None
    if server:
        from dcode.server.client import RemoteServer

        remote = RemoteServer.from_env(server)
    try:
        session_id = served_session(remote, request) if remote else pick_session(settings, request)
        settings = session_model(settings, None if remote else session_id, model_given)
    except (ConfigError, SessionDatabaseError) as exc:
        print(for_stream(f"dcode: error: {exc}", sys.stderr), file=sys.stderr)
        return EXIT_USAGE

    from dcode.library_logs import route_library_logs
    from dcode.tui.app import DcodeApp
    from dcode.tui.graphics import detect
    from dcode.tui.native_stderr import native_stderr_to

    route_library_logs()  # a library's warning would tear the screen; notices say what failed

    app = DcodeApp(
        settings,
        prompt=prompt,
        session_id=session_id,
        setup_problem=find_setup_problem(settings, attached=remote is not None),
        reload_settings=_reloader(settings, cli),
        graphics=detect(),  # asked now: once the app runs, Textual owns stdin
        remote=remote,
        served_context=model_flags(cli) if remote else None,
    )
    gc.freeze()  # what the imports built lives as long as the process: no collection need walk it
    with native_stderr_to(settings.home / "logs" / "stderr.log"):
        app.run()
    _print_resume_line(app.last_session_id, remote.url if remote else None)
    if app.exit_signals.received is not None:
        from dcode.processes.exit_signals import exit_code

        return exit_code(app.exit_signals.received)
    return app.return_code or EXIT_OK


def model_flags(cli: Mapping[str, object] | None) -> dict[str, str]:
    """The model flags given on the command line (``-m``, ``--base-url``, ``--api``,
    ``--effort``), which the runs on a dcode server ask for over the server's own model; the
    client's config names no model there."""
    from dcode.server.options import MODEL_KEYS

    given = cli or {}
    return {key: str(given[key]) for key in MODEL_KEYS if given.get(key)}


def served_session(remote: RemoteServer, request: HeadlessRequest) -> str | None:
    """The server's thread ``-r ID``, ``-r`` or ``-c`` names (the newest one without an id);
    None for a new one. A server that cannot say is a ``ConfigError``: one line."""
    import asyncio

    from dcode.server.client import RemoteFailure, failure_line, pick_thread

    latest = request.resume_latest or request.continue_here
    try:
        return asyncio.run(pick_thread(remote, request.resume_id, latest=latest))
    except RemoteFailure as exc:
        raise ConfigError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the server's failure, in one line
        raise ConfigError(failure_line(exc, remote.url)) from None


def _print_resume_line(session_id: str | None, server: str | None = None) -> None:
    """On the normal screen, now that the full-screen app is gone (a hung-up terminal is fine)."""
    line = resume_line(session_id)
    if line and server:
        line = f"Session {session_id} is on {server}. Resume with: dcode -r {session_id} --server {server}"
    if not line:
        return
    with contextlib.suppress(OSError):
        print(line, flush=True)


def resume_line(session_id: str | None) -> str | None:
    """How to come back to the session after quitting; None when no session was started."""
    if not session_id:
        return None
    return f"Session {session_id} saved. Resume with: dcode -r {session_id}"
