"""The ``dcode`` command: the TUI by default, ``-p`` headless, and the subcommands.

Everything heavy (textual, langchain, langgraph, openai) is imported inside the command that
needs it, so ``dcode --help`` and ``dcode --version`` stay instant.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TextIO, TypeVar

import typer

from dcode import __version__
from dcode.sandbox.modes import SandboxMode
from dcode.settings.config import (
    ApprovalMode,
    ConfigError,
    ReasoningEffort,
    Settings,
    WireApi,
    load_settings,
)
from dcode.terminal_text import for_stream, json_safe

if TYPE_CHECKING:
    from dcode.cli.headless import OutputFormat
    from dcode.cli.headless_media import ProjectCommand
    from dcode.media.uploads.index import Scope, UploadIndex
    from dcode.media.uploads.remote import RemoteFiles
    from dcode.server.client import RemoteServer

T = TypeVar("T")

SUBCOMMANDS = {
    "sessions",
    "media",
    "config",
    "doctor",
    "trust",
    "agents",
    "mcp",
    "files",
    "serve",
    "attach",
}
_SESSION_ID = re.compile(r"^[0-9a-f]{4,32}$|^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$")
"""A local session's id (or prefix), or a dcode server's thread id (a UUID)."""

root = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
sub = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
sessions_app = typer.Typer(
    help="List, show, rewind, delete, export and import saved sessions.", no_args_is_help=True
)
media_app = typer.Typer(help="Inspect what media would be sent to a model.", no_args_is_help=True)
config_app = typer.Typer(
    help="Where the config lives and what it resolves to.", no_args_is_help=True
)
agents_app = typer.Typer(help="The agents the task tool can hand a job to.", no_args_is_help=True)
sub.add_typer(sessions_app, name="sessions")
sub.add_typer(media_app, name="media")
sub.add_typer(config_app, name="config")
sub.add_typer(agents_app, name="agents")
files_app = typer.Typer(
    help="The remote files that carry images on a Files transport route.", no_args_is_help=True
)
sub.add_typer(files_app, name="files")
mcp_app = typer.Typer(
    help="The MCP servers dcode starts: $DCODE_HOME/mcp.json and the project's .mcp.json.",
    no_args_is_help=True,
)
sub.add_typer(mcp_app, name="mcp")


def _echo(text: str, *, err: bool = False) -> None:
    """Print output (or, with ``err``, a message on stderr). On a terminal it is made safe
    first: session titles, transcripts, servers' names and errors may hold escape sequences
    (``terminal_text``); a pipe gets every byte."""
    typer.echo(for_stream(text, sys.stderr if err else sys.stdout), err=err)


def _fail(message: str, code: int = 2) -> NoReturn:
    _echo(f"dcode: error: {message}", err=True)
    raise typer.Exit(code)


def _settings(default_approve: ApprovalMode = ApprovalMode.MANUAL, **cli: object) -> Settings:
    try:
        return load_settings(cli=cli, default_approve=default_approve)
    except ConfigError as exc:
        _fail(str(exc))
        raise  # unreachable


def _version(value: bool) -> None:
    if value:
        _echo(f"dcode {__version__}")
        raise typer.Exit()


_SERVER = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="DCODE_SERVER",
        help="Run the session on a dcode server (dcode serve) at URL; its token from DCODE_SERVER_TOKEN.",
    ),
]


@root.command(
    help=(
        "Open the dcode TUI in this directory, optionally submitting PROMPT. With -p, run PROMPT "
        "headless and print the answer (PROMPT '-' reads stdin).\n\n"
        "Subcommands: dcode sessions list|show|rewind|delete|export|import, dcode media inspect, dcode config path|show, "
        "dcode agents list, dcode mcp list|get|add|remove, dcode files list|info|delete|prune, dcode trust [PATH] [--revoke|--list], dcode doctor, dcode serve."
    )
)
def run(
    prompt: Annotated[
        str | None, typer.Argument(help="The prompt; '-' reads it from stdin.")
    ] = None,
    print_mode: Annotated[
        bool, typer.Option("-p", "--print", help="Run headless and print the final answer.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "-m",
            "--model",
            help="provider:model, e.g. openai:gpt-5.1, deepseek:deepseek-chat, ollama:qwen3-coder.",
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Any OpenAI-compatible endpoint.")
    ] = None,
    api: Annotated[
        WireApi | None,
        typer.Option(
            "--api",
            help="Wire protocol: chat or responses (default: responses on api.openai.com, chat elsewhere).",
        ),
    ] = None,
    resume_id: Annotated[str | None, typer.Option("--resume-id", hidden=True)] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "-r", "--resume", help="Resume a session: -r ID, or the most recent one with -r alone."
        ),
    ] = False,
    continue_: Annotated[
        bool,
        typer.Option(
            "-c", "--continue", help="Continue the most recent session in this directory."
        ),
    ] = False,
    approve: Annotated[
        ApprovalMode | None,
        typer.Option(
            "--approve",
            help="manual | edits | all | plan (TUI default manual, headless default edits; plan: read only, and print the plan).",
        ),
    ] = None,
    sandbox: Annotated[
        SandboxMode | None,
        typer.Option(
            "--sandbox",
            help="Run shell commands in a sandbox: workspace-write | read-only | off (default: [sandbox] mode, off).",
        ),
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Stop after N model turns.")
    ] = None,
    max_budget_usd: Annotated[
        float | None,
        typer.Option(
            "--max-budget-usd",
            help="End a turn once the session has spent this many USD (subagents and compaction count).",
        ),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            min=1,
            help="End a turn once the session has used this many tokens, input and output (what bounds a local model).",
        ),
    ] = None,
    effort: Annotated[
        ReasoningEffort | None,
        typer.Option(
            "--effort",
            help="Reasoning effort: none | minimal | low | medium | high | xhigh (default: the model's).",
        ),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--output-format", help="Headless output: text | json | stream-json.")
    ] = "text",
    image: Annotated[
        list[Path] | None,
        typer.Option(
            "-i",
            "--image",
            help="Attach an image or a video (repeatable; a video is sampled over its first 100 s).",
        ),
    ] = None,
    mcp_config: Annotated[
        list[Path] | None,
        typer.Option(
            "--mcp-config",
            help='Also load MCP servers from FILE ({"mcpServers": ...}, or another client\'s file as it is, e.g. .gemini/settings.json, .vscode/mcp.json; repeatable).',
        ),
    ] = None,
    add_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--add-dir",
            help="Also work in DIR as in the workspace: writes there need no approval in edits, the sandbox lets commands write there, MCP servers get it as a root (repeatable).",
        ),
    ] = None,
    no_mcp: Annotated[bool, typer.Option("--no-mcp", help="Start no MCP servers.")] = False,
    trust_project_mcp: Annotated[
        bool,
        typer.Option(
            "--trust-project-mcp",
            help="Headless: start the project's .mcp.json servers without an approval.",
        ),
    ] = False,
    allowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--allowedTools",
            "--allowed-tools",
            help='Permission rules that allow, e.g. "Bash(git log:*) Edit" (repeatable; commas or spaces between rules).',
        ),
    ] = None,
    disallowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--disallowedTools",
            "--disallowed-tools",
            help='Permission rules that deny, in any mode, e.g. "Bash(rm:*) WebFetch".',
        ),
    ] = None,
    server: _SERVER = None,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="With -p --server: start the run in the background and print its session (dcode attach ID follows it).",
        ),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    if not print_mode:
        _require_terminal()
    if detach and not (print_mode and server):
        _fail("--detach needs -p and --server (or DCODE_SERVER)")
    if server and image:
        _fail("--image is not sent to a dcode server: attach images in a local session")
    from dcode.cli.headless import OutputFormat

    if output_format not in {f.value for f in OutputFormat}:
        _fail(f"--output-format must be text, json or stream-json, not {output_format!r}")
    _require_utf8(prompt)
    from dcode.settings.private_files import secure_home

    cli = {
        "model": model,
        "base_url": base_url,
        "api": api,
        "approve": approve,
        "sandbox": sandbox,
        "max_turns": max_turns,
        "budget_usd": max_budget_usd,
        "budget_tokens": max_tokens,
        "effort": effort,
        "mcp_configs": mcp_config,
        "no_mcp": no_mcp,
        "trust_project_mcp": trust_project_mcp,
        "allowed_tools": allowed_tools,
        "disallowed_tools": disallowed_tools,
        "add_dirs": add_dir,
    }
    default_approve = ApprovalMode.EDITS if print_mode else ApprovalMode.MANUAL
    settings = _settings(default_approve, **cli)
    secure_home(settings.home)
    _guard_processes(settings)
    if print_mode and server:
        from dcode.cli.run_request import HeadlessRequest

        wanted = {
            "model": model,
            "base_url": base_url,
            "api": api,
            "effort": effort,
            "budget_usd": settings.budget_usd,  # the client's cap, its config's or its flag's
            "budget_tokens": settings.budget_tokens,
        }
        request = HeadlessRequest(
            prompt=_headless_prompt(settings, prompt)[0],
            output_format=OutputFormat(output_format),
            resume_id=resume_id,
            resume_latest=resume,
            continue_here=continue_,
            server=server,
            server_context=tuple((k, str(v)) for k, v in wanted.items() if v),
            detach=detach,
        )
        from dcode.cli.headless import main_headless

        raise typer.Exit(main_headless(settings, request, debug=debug))
    if print_mode:
        _run_headless(
            settings,
            prompt,
            OutputFormat(output_format),
            resume_id,
            resume,
            continue_,
            model is not None,
            image or [],
            debug,
        )
        return
    from dcode.tui.launch import launch_tui

    raise typer.Exit(
        launch_tui(
            settings,
            cli=cli,
            prompt=prompt,
            resume_id=resume_id,
            resume_latest=resume,
            continue_here=continue_,
            model_given=model is not None,
            server=server,
        )
    )


def _guard_processes(settings: Settings) -> None:
    """Before anything is started: the provider keys out of what ``/proc/<pid>/environ`` shows
    of dcode, and every process tree dcode starts tracked (ending what a killed dcode left)."""
    from dcode.agent.backends.environment import ShellEnvironment
    from dcode.processes.environ_block import hide
    from dcode.processes.trees import TREES

    hide(ShellEnvironment.for_settings(settings).hides)
    notice = TREES.install(settings.home)
    if notice:
        typer.echo(notice, err=True)


def _run_headless(
    settings: Settings,
    prompt: str | None,
    output_format: OutputFormat,
    resume_id: str | None,
    resume_latest: bool,
    continue_here: bool,
    model_given: bool,
    images: list[Path],
    debug: bool,
) -> None:
    from dcode.agent.store.base import SessionDatabaseError
    from dcode.cli.headless import main_headless
    from dcode.cli.run_request import HeadlessRequest, pick_session, session_model
    from dcode.settings.project_gate import ignored_rules_warning, ignored_warning

    for warning in (ignored_warning(settings), ignored_rules_warning(settings)):
        if warning:
            _echo(warning, err=True)
    prompt, command = _headless_prompt(settings, prompt)
    request = HeadlessRequest(
        prompt=prompt,
        output_format=output_format,
        resume_id=resume_id,
        resume_latest=resume_latest,
        continue_here=continue_here,
    )
    try:
        settings = session_model(settings, pick_session(settings, request), model_given)
    except (ConfigError, SessionDatabaseError) as exc:
        _fail(str(exc))
    if images or "@" in prompt:
        from dcode.cli.headless_media import attach_images

        try:
            request = attach_images(
                settings,
                request,
                images,
                command=command,
                warn=lambda line: _echo(f"dcode: warning: {line}", err=True),
            )
        except ConfigError as exc:
            _fail(str(exc), code=1)
    raise typer.Exit(main_headless(settings, request, debug=debug))


def _headless_prompt(settings: Settings, prompt: str | None) -> tuple[str, ProjectCommand | None]:
    """``-p``'s prompt (``-`` or none on a pipe: stdin), with a project command expanded."""
    if prompt is None and not sys.stdin.isatty():
        prompt = "-"
    if prompt == "-":
        prompt = _read_stdin()
    if not prompt or not prompt.strip():
        _fail("-p needs a prompt: dcode -p 'your task' (or '-' to read stdin)")
    return _own_command(settings, prompt)


def _own_command(settings: Settings, prompt: str) -> tuple[str, ProjectCommand | None]:
    """The prompt one of your own commands sends (``/review src/app.py``), else ``prompt``;
    and the command, when it is the project's (what it mentions stays inside the project)."""
    if not prompt.lstrip().startswith("/"):
        return prompt, None
    from dcode.cli.headless_media import ProjectCommand
    from dcode.prompts.commands import load_commands

    if (found := load_commands(settings.home, settings.workspace).find(prompt)) is None:
        return prompt, None
    command, arguments = found
    return command.expand(arguments), ProjectCommand(
        command.name, arguments
    ) if command.scope == "project" else None


@contextmanager
def _session_database() -> Iterator[None]:
    """An unusable session store is one line (what and remedy) and exit 2, never a traceback."""
    from dcode.agent.store.base import SessionDatabaseError

    try:
        yield
    except SessionDatabaseError as exc:
        _fail(str(exc))


def _read_stdin() -> str:
    """The prompt piped in, decoded as UTF-8 whatever the locale; anything else is refused."""
    import io

    try:
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="strict").read()
    except UnicodeDecodeError as exc:
        _fail(
            f"the prompt on stdin is not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); nothing was sent"
        )
        raise  # unreachable


def _require_terminal() -> None:
    """The TUI draws on a terminal and reads keys from one: without one (a pipe, a file, cron,
    CI) it could only hang or scribble escape codes, so dcode says how to run headless instead."""
    missing = [
        name
        for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout))
        if not _is_terminal(stream)
    ]
    if not missing:
        return
    what = " and ".join(missing)
    _fail(
        f"the TUI needs a terminal, and {what} {'is' if len(missing) == 1 else 'are'} not one. "
        'To run without one: dcode -p "PROMPT" (or: ... | dcode -p -), '
        "with --output-format json or stream-json for scripts"
    )


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # replaced by something without a file, or closed
        return False


def _require_utf8(prompt: str | None) -> None:
    """A prompt from argv arrives with undecodable bytes smuggled in as surrogates; such a
    prompt could be neither sent nor saved, so it is refused before anything starts."""
    if prompt is None:
        return
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = (
            os.fsencode(prompt[exc.start])[0]
            if 0xDC80 <= ord(prompt[exc.start]) <= 0xDCFF
            else None
        )
        what = (
            f"byte 0x{byte:02x}"
            if byte is not None
            else f"character U+{ord(prompt[exc.start]):04X}"
        )
        _fail(
            f"the prompt is not valid UTF-8 ({what} at character {exc.start + 1}); nothing was sent"
        )


@sessions_app.command("list", help="Saved sessions, newest first (--server: a server's).")
def sessions_list(
    here: Annotated[
        bool, typer.Option("--here", help="Only sessions started in this directory.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
    server: _SERVER = None,
) -> None:
    from dcode.cli.sessions import list_sessions

    if server:
        from dcode.cli.remote import list_threads

        _echo(_on_server(server, lambda remote: list_threads(remote, limit=limit)))
        return
    settings = _settings()
    with _session_database():
        _echo(list_sessions(settings, here=here, limit=limit))


@sessions_app.command("show", help="A session's details and transcript.")
def sessions_show(
    session_id: str,
    usage: Annotated[
        bool,
        typer.Option(
            "--usage",
            help="The session's spend by model and by agent (input, cached, output, reasoning, USD) instead of its transcript.",
        ),
    ] = False,
) -> None:
    from dcode.cli.sessions import show_session

    settings = _settings()
    with _session_database():
        try:
            _echo(show_session(settings, session_id, usage=usage))
        except ConfigError as exc:
            _fail(str(exc), code=1)


@sessions_app.command(
    "rewind", help="A session's prompts; with N, the session taken back to before prompt N."
)
def sessions_rewind(
    session_id: str,
    number: Annotated[
        int | None,
        typer.Argument(help="The prompt to go back to before (see the list without it).", min=1),
    ] = None,
    code_only: Annotated[
        bool, typer.Option("--code-only", help="Put the files back; keep the conversation.")
    ] = False,
    conversation_only: Annotated[
        bool,
        typer.Option("--conversation-only", help="Take the conversation back; keep the files."),
    ] = False,
) -> None:
    from dcode.agent.rewind.conversation import RewindError
    from dcode.agent.store.base import SessionHeld
    from dcode.cli.rewind import find_session, rewind, turns_table

    if code_only and conversation_only:
        _fail(
            "--code-only and --conversation-only leave nothing to rewind together: pick one, or neither for both"
        )
    settings = _settings()
    with _session_database():
        try:
            info = find_session(settings, session_id)
            if number is None:
                _echo(turns_table(settings, info))
                return
            lines = rewind(
                settings, info, number, conversation=not code_only, code=not conversation_only
            )
        except ConfigError as exc:
            _fail(str(exc), code=1)
            return
        except SessionHeld as exc:
            _fail(f"{exc}: quit it there first", code=1)
            return
        except RewindError as exc:
            _fail(str(exc), code=1)
            return
    _echo("\n".join(lines))


@sessions_app.command(
    "delete", help="Delete a session and its checkpoints (not one open in a dcode)."
)
def sessions_delete(session_id: str) -> None:
    from dcode.agent.session_files import delete_session_files
    from dcode.agent.store import open_store
    from dcode.agent.store.base import SessionHeld

    settings = _settings()
    store = open_store(settings)
    with _session_database():
        info = store.get(session_id)
        if info is None:
            _fail(f"no session {session_id!r}", code=1)
            return
        try:
            with store.hold(info.id):
                store.delete(info.id)
                delete_session_files(settings.home, info.id)
        except SessionHeld as exc:
            _fail(f"{exc}: quit it there first", code=1)
    _echo(f"Deleted session {info.id}.")


@sessions_app.command(
    "export",
    help=(
        "Write sessions (all, or those named by id or prefix) to stdout or -o FILE, for "
        "`dcode sessions import` on another store or machine: checkpoints, subagents, turns, "
        "file changes with the kept contents /rewind needs, and token figures. Attachments, "
        "archives and large tool results stay files under $DCODE_HOME: the export names them "
        "(on stderr) and the import says which are missing there."
    ),
)
def sessions_export(
    session_ids: Annotated[
        list[str] | None, typer.Argument(help="Session ids or prefixes; none: every session.")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to FILE instead of stdout.")
    ] = None,
) -> None:
    from dcode.cli.sessions import export_sessions

    settings = _settings()
    with _session_database():
        try:
            if output is None:
                notes = export_sessions(settings, session_ids or [], sys.stdout)
            else:
                with _private_output(output) as out:
                    notes = export_sessions(settings, session_ids or [], out)
        except ConfigError as exc:
            _fail(str(exc), code=1)
            return
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror or exc}", code=1)
            return
    for note in notes:
        _echo(note, err=True)


@contextmanager
def _private_output(path: Path) -> Iterator[TextIO]:
    """``path`` written whole or not at all, readable by its owner only (sessions are private)."""
    import tempfile

    handle, name = tempfile.mkstemp(dir=path.resolve().parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            yield out
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


@sessions_app.command(
    "import",
    help=(
        "Import sessions from a file `dcode sessions export` wrote ('-': stdin). A session "
        "already here is skipped (--replace replaces it); a bad file changes nothing."
    ),
)
def sessions_import(
    source: Annotated[str, typer.Argument(help="The export file; '-' reads stdin.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a session that is already here.")
    ] = False,
) -> None:
    import shutil
    import tempfile

    from dcode.agent.store.transfer import ExportFormatError
    from dcode.cli.sessions import import_sessions

    settings = _settings()
    with _session_database(), tempfile.TemporaryFile() as spooled:
        try:
            if source == "-":
                shutil.copyfileobj(sys.stdin.buffer, spooled)
                spooled.seek(0)
                lines = import_sessions(settings, spooled, replace=replace)
            else:
                with open(source, "rb") as given:
                    lines = import_sessions(settings, given, replace=replace)
        except OSError as exc:
            _fail(f"cannot read {source}: {exc.strerror or exc}", code=1)
            return
        except ExportFormatError as exc:
            _fail(f"{source}: {exc}; nothing was imported", code=1)
            return
    _echo("\n".join(lines))


@config_app.command("path", help="Print the config file locations.")
def config_path() -> None:
    settings = _settings()
    _echo(f"user:    {settings.user_config}")
    _echo(f"project: {settings.project_config}")
    _echo(f"home:    {settings.home}")


@config_app.command(
    "show",
    help=(
        "Print the merged settings as JSON; 'ignored' lists the project's settings left out "
        "because the project is not trusted, and why (judged against the TUI's default mode)."
    ),
)
def config_show() -> None:
    import json

    from dcode.settings.config import describe

    _echo(json_safe(json.dumps(describe(_settings()), indent=2, default=str)))


@agents_app.command(
    "list",
    help=(
        "Each agent with its source, description, tools, model and approval mode, then the files left "
        "out and why. Sources, lowest priority first: $DCODE_HOME/agents, ~/.claude/agents, "
        ".dcode/agents, .claude/agents."
    ),
)
def agents_list(
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object: agents and problems.")
    ] = False,
) -> None:
    from dcode.cli.agents import list_agents

    _echo(list_agents(_settings(), as_json=as_json))


_MCP_CONFIG = Annotated[
    list[Path] | None,
    typer.Option(
        "--mcp-config", help="Also read FILE, as a run with --mcp-config FILE would (repeatable)."
    ),
]


@mcp_app.command(
    "list", help="Each MCP server with its command or URL, type and scope (nothing is started)."
)
def mcp_list(mcp_config: _MCP_CONFIG = None) -> None:
    from dcode.cli.mcp import list_servers

    _echo(list_servers(_settings(mcp_configs=mcp_config)))


@mcp_app.command(
    "get", help="One MCP server's settings (the values of env and headers are not shown)."
)
def mcp_get(name: str, mcp_config: _MCP_CONFIG = None) -> None:
    from dcode.cli.mcp import get_server

    try:
        _echo(get_server(_settings(mcp_configs=mcp_config), name))
    except ConfigError as exc:
        _fail(str(exc))


@mcp_app.command(
    "add",
    help="Add a server: dcode mcp add NAME COMMAND [ARGS...] (stdio), or dcode mcp add NAME URL (streamable HTTP; --transport sse for SSE). Put -- before a command's own options.",
)
def mcp_add(
    name: str,
    target: Annotated[str, typer.Argument(metavar="COMMAND_OR_URL")],
    args: Annotated[list[str] | None, typer.Argument(help="The command's arguments.")] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            "-t",
            "--transport",
            help="stdio | http | sse (default: http for an http(s):// URL, else stdio).",
        ),
    ] = None,
    scope: Annotated[
        str,
        typer.Option("-s", "--scope", help="user ($DCODE_HOME/mcp.json) | project (.mcp.json)."),
    ] = "user",
    env: Annotated[
        list[str] | None,
        typer.Option("-e", "--env", help="KEY=value for a stdio server (repeatable)."),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "-H", "--header", help="'Name: value' for an http or sse server (repeatable)."
        ),
    ] = None,
) -> None:
    from dcode.cli.mcp import add_server

    try:
        _echo(
            add_server(
                _settings(),
                name,
                target,
                args or [],
                transport=transport,
                scope=scope,
                env=env or [],
                headers=header or [],
            )
        )
    except ConfigError as exc:
        _fail(str(exc))


@mcp_app.command(
    "remove",
    help="Remove a server (from the user's file, else the project's; or the --scope given).",
)
def mcp_remove(
    name: str,
    scope: Annotated[str | None, typer.Option("-s", "--scope", help="user | project.")] = None,
) -> None:
    from dcode.cli.mcp import remove_server

    try:
        _echo(remove_server(_settings(), name, scope))
    except ConfigError as exc:
        _fail(str(exc))


_FILES_MODEL = Annotated[
    str | None,
    typer.Option(
        "-m",
        "--model",
        help="The model whose endpoint and key own the files (default: the configured one).",
    ),
]
_FILES_BASE_URL = Annotated[str | None, typer.Option("--base-url")]


def _files(
    model: str | None,
    base_url: str | None,
    action: Callable[[RemoteFiles, UploadIndex, Scope], Awaitable[str]],
) -> None:
    from dcode.media.uploads.remote import FilesError

    settings = _settings(model=model, base_url=base_url)
    try:
        from dcode.cli.files import run_files

        _echo(run_files(settings, action))
    except ConfigError as exc:
        _fail(str(exc))
    except FilesError as exc:
        _fail(str(exc), code=1)
    except OSError as exc:
        _fail(f"cannot use the upload index: {exc.strerror or exc}", code=1)


@files_app.command(
    "list", help="The key's remote files, dcode's own marked with the image variant each holds."
)
def files_list(model: _FILES_MODEL = None, base_url: _FILES_BASE_URL = None) -> None:
    from dcode.cli.files import list_files

    _files(model, base_url, list_files)


@files_app.command("info", help="One remote file, by its file id or by the variant id it holds.")
def files_info(
    ident: Annotated[str, typer.Argument(metavar="FILE_OR_VARIANT_ID")],
    model: _FILES_MODEL = None,
    base_url: _FILES_BASE_URL = None,
) -> None:
    from dcode.cli.files import file_info

    _files(model, base_url, lambda remote, index, scope: file_info(remote, index, scope, ident))


@files_app.command(
    "delete",
    help="Release one file: delete it remotely and drop its mapping (by file id or variant id).",
)
def files_delete(
    ident: Annotated[str, typer.Argument(metavar="FILE_OR_VARIANT_ID")],
    model: _FILES_MODEL = None,
    base_url: _FILES_BASE_URL = None,
) -> None:
    from dcode.cli.files import delete_file

    _files(model, base_url, lambda remote, index, scope: delete_file(remote, index, scope, ident))


@files_app.command(
    "prune",
    help="Release the whole scope: every file dcode uploaded with this key, and every mapping.",
)
def files_prune(model: _FILES_MODEL = None, base_url: _FILES_BASE_URL = None) -> None:
    from dcode.cli.files import prune_files

    _files(model, base_url, prune_files)


@sub.command(
    "trust",
    help=(
        "Trust the project at PATH (default: here), so that its .dcode/config.toml applies in full: "
        "approval mode, base URL, providers, shell environment; and its agents (.dcode/agents, "
        ".claude/agents) may choose any model. Until then dcode ignores those keys and models. "
        "Editing these files withdraws the trust until it is given again."
    ),
)
def trust(
    path: Annotated[
        Path | None, typer.Argument(help="The project directory (default: the current one).")
    ] = None,
    revoke: Annotated[bool, typer.Option("--revoke", help="Withdraw the trust instead.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted projects.")] = False,
) -> None:
    from dcode.cli.trust import list_projects, revoke_project, trust_project

    if revoke and list_:
        _fail("--revoke and --list do not go together")
    root = path or Path.cwd()
    try:
        if list_:
            _echo(list_projects())
        elif revoke:
            _echo(revoke_project(root))
        else:
            _echo(trust_project(root))
    except ConfigError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot update the trust record: {exc.strerror or exc}", code=1)


@sub.command(
    "attach",
    help="Follow a session on a dcode server: its history, then its live run to the end (the newest session without THREAD).",
)
def attach(thread: Annotated[str | None, typer.Argument()] = None, server: _SERVER = None) -> None:
    from dcode.cli.remote import attach as follow

    if not server:
        _fail("attach needs --server URL (or DCODE_SERVER)")
    _on_server(server, lambda remote: follow(remote, thread, out=sys.stdout))


def _on_server(url: str, call: Callable[[RemoteServer], Coroutine[object, object, T]]) -> T:
    """``call`` on the dcode server at ``url``; its failure is one line and exit 1."""
    import asyncio

    from dcode.cli.remote import RemoteFailure
    from dcode.server.client import RemoteServer, failure_line

    remote = RemoteServer.from_env(url)
    try:
        return asyncio.run(call(remote))
    except RemoteFailure as exc:
        _fail(str(exc), code=1)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:  # noqa: BLE001 - the server's failure, in one line
        _fail(failure_line(exc, remote.url), code=1)


@sub.command(
    "serve",
    help="Serve dcode's graph for this workspace on LangGraph's local server (needs dcode[server]).",
)
def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback unless --token).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 2024,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="DCODE_SERVE_TOKEN",  # kept out of `ps`
            help="Clients must send it (DCODE_SERVER_TOKEN); required off loopback.",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("-m", "--model", help="The runs' model unless a run names one.")
    ] = None,
    base_url: Annotated[str | None, typer.Option("--base-url")] = None,
    api: Annotated[WireApi | None, typer.Option("--api")] = None,
    effort: Annotated[ReasoningEffort | None, typer.Option("--effort")] = None,
) -> None:
    from dcode.cli.serve import exec_server, serve_problem, start_problem, start_warnings

    if problem := serve_problem(host, token):
        _fail(problem)
    flags: dict[str, object] = {"model": model, "base_url": base_url, "api": api, "effort": effort}
    settings = _settings(
        ApprovalMode.MANUAL, **flags
    )  # a bad flag or config fails here, in one line
    if problem := start_problem(settings, host, port):
        _fail(problem)
    for line in start_warnings(settings):
        _echo(line, err=True)
    _echo(f"dcode: serving {settings.workspace} on http://{host}:{port} (Ctrl+C stops)", err=True)
    exec_server(settings, host, port, token, {k: str(v) if v else None for k, v in flags.items()})


@sub.command("doctor", help="Check the model, key, profile and local tools.")
def doctor(
    model: Annotated[str | None, typer.Option("-m", "--model")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url")] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Also test the connection to the model's server.")
    ] = False,
    ping: Annotated[
        bool,
        typer.Option(
            "--ping",
            help="Also send the model one tiny request: how long it takes to answer, and what it says.",
        ),
    ] = False,
) -> None:
    from dcode.cli.doctor import run_doctor

    raise typer.Exit(run_doctor(_settings(model=model, base_url=base_url), check=check, ping=ping))


@media_app.command(
    "inspect", help="Show exactly what would be sent for each PATH (images; a video's frames)."
)
def media_inspect(
    paths: list[Path],
    model: Annotated[str | None, typer.Option("-m", "--model")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per path.")] = False,
    offset: Annotated[float, typer.Option("--offset", help="Video: seconds to skip.")] = 0.0,
    limit: Annotated[float, typer.Option("--limit", help="Video: seconds to cover.")] = 100.0,
    sheet: Annotated[
        Path | None, typer.Option("--sheet", help="Video: write its contact sheet to this PNG.")
    ] = None,
) -> None:
    from dcode.cli.media import inspect_command

    raise typer.Exit(
        inspect_command(
            _settings(model=model), paths, as_json=as_json, offset=offset, limit=limit, sheet=sheet
        )
    )


def _rewrite_resume(argv: list[str]) -> list[str]:
    """``-r`` takes an optional id: it is an id only when the next word looks like one."""
    out: list[str] = []
    skip = False
    for index, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word in {"-r", "--resume"}:
            following = argv[index + 1] if index + 1 < len(argv) else ""
            if _SESSION_ID.match(following):
                out += ["--resume-id", following]
                skip = True
                continue
        if word.startswith("--resume="):
            out += ["--resume-id", word.split("=", 1)[1]]
            continue
        out.append(word)
    return out


RULE_FLAGS = ("--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools")


def _gather_rule_words(args: list[str]) -> list[str]:
    """Claude Code's way of writing the rule flags, ``--allowedTools "Bash(git log:*)" Edit``:
    the words after the flag's value that are rules (a Claude tool name, with or without its
    parentheses, or an MCP tool) join that value rather than become the prompt."""
    if not any(word in RULE_FLAGS for word in args):
        return args
    from dcode.agent.tools.claude_names import CLAUDE_TOOLS  # only here: --help stays light

    def is_rule(word: str) -> bool:
        name = word.split("(", 1)[0]
        return (name in CLAUDE_TOOLS and (name == word or word.endswith(")"))) or (
            word.startswith("mcp__") and " " not in word
        )

    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        out.append(word)
        i += 1
        if word in RULE_FLAGS and i < len(args):
            value = [args[i]]
            i += 1
            while i < len(args) and is_rule(args[i]):
                value.append(args[i])
                i += 1
            out.append(" ".join(value))
    return out


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        sub(args, prog_name="dcode")
        return
    root(_rewrite_resume(_gather_rule_words(args)), prog_name="dcode")


if __name__ == "__main__":
    main()
