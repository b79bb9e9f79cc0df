"""``dcode serve``: dcode's graph on LangGraph's local server, for the current workspace.

Under the hood it is ``langgraph dev`` (from the optional extra ``dcode[server]``) with the
package's ``langgraph.json``, started in place of this process: no reload, no browser, no
telemetry or version check, and enough jobs per worker for sessions that run in parallel. The
model flags become the defaults of every run (``dcode.server.options``); the server keeps its
own records (threads, runs) in a directory of its own under ``$DCODE_HOME/server``, so nothing is
written into the workspace, and its checkpoints go to the session store.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import socket
import sys
from importlib.util import find_spec
from pathlib import Path

from dcode.server import options
from dcode.settings.config import ConfigError, Settings
from dcode.settings.private_files import ensure_private_dir

MISSING_EXTRA = "dcode serve needs the server extra: pip install 'dcode[server]'"
JOBS_PER_WORKER = 32
"""Runs one server process works on at once (LangGraph's default is one): parallel sessions."""
SERVER_DIR = "server"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_problem(host: str, token: str | None) -> str | None:
    """Why the server must not start as asked (None: it may)."""
    if not (_installed("langgraph_api") and _installed("langgraph_cli")):
        return MISSING_EXTRA
    if not is_loopback(host) and not token:
        return f"--token is required to listen on {host}: any address but loopback needs one"
    return None


def start_problem(settings: Settings, host: str, port: int) -> str | None:
    """Why the server would not start as asked, said before it starts: ``langgraph dev`` prints
    the traceback of a start-up that failed (the runs' model has no key) and then hangs, and
    moves to another port when the one asked for is taken (clients would reach whatever holds
    it)."""
    from dcode.models.spec import resolve_endpoint

    try:
        resolve_endpoint(settings)
    except ConfigError as exc:
        return f"the runs' model: {exc}"
    return store_problem(settings) or port_problem(host, port)


def store_problem(settings: Settings) -> str | None:
    """Why the session store on a PostgreSQL server cannot be used (its line), if it cannot:
    the server's start-up would otherwise end in a page of log around that line."""
    if not settings.database_url:
        return None  # SQLite: a file of the home, made when first used
    from dcode.agent.store import open_store
    from dcode.agent.store.base import SessionDatabaseError

    try:
        open_store(settings, read_only=True)  # says when the postgres extra is missing
        from dcode.agent.store.postgres_server import connect

        connect(settings.database_url).close()
    except SessionDatabaseError as exc:
        return str(exc)
    return None


def port_problem(host: str, port: int) -> str | None:
    """Whether ``host:port`` can be listened on (None) or why not, bound as uvicorn binds it."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        return f"cannot listen on {host}: {exc.strerror}"
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def _installed(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except ValueError:  # imported, and then taken out again (sys.modules[name] = None)
        return False


def state_dir(settings: Settings) -> Path:
    """Where the server keeps its threads and runs for this workspace."""
    digest = hashlib.sha256(str(Path(settings.workspace).resolve()).encode()).hexdigest()[:16]
    return settings.home / SERVER_DIR / digest


def server_env(
    settings: Settings, base: dict[str, str], model_flags: dict[str, str | None], token: str | None
) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k != options.TOKEN_ENV}
    env[options.WORKSPACE_ENV] = str(settings.workspace)
    names = {
        "model": options.MODEL_ENV,
        "base_url": options.BASE_URL_ENV,
        "api": options.API_ENV,
        "effort": options.EFFORT_ENV,
    }
    for key, name in names.items():
        env.pop(name, None)
        if value := model_flags.get(key):
            env[name] = value
    if token:
        env[options.TOKEN_ENV] = token
    env["LANGGRAPH_CLI_NO_ANALYTICS"] = "1"
    env["LANGGRAPH_NO_VERSION_CHECK"] = "true"
    env["LANGSMITH_TRACING"] = "false"
    return env


def server_argv(host: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--config",
        str(options.CONFIG_FILE),
        "--host",
        host,
        "--port",
        str(port),
        "--no-reload",
        "--no-browser",
        "--n-jobs-per-worker",
        str(JOBS_PER_WORKER),
    ]


def start_warnings(settings: Settings) -> list[str]:
    """What the server leaves out of the workspace, said before it starts, as ``dcode -p``
    says it: the project's MCP servers and hooks that wait for the user's trust, and the MCP
    configs' problems."""
    from dcode.mcp.plan import plan, skipped_warning
    from dcode.settings.hook_sources import skipped_line

    servers = plan(settings)
    hooks = skipped_line(settings.skipped_hooks)
    lines = [
        *(f"dcode: warning: {problem}" for problem in servers.problems),
        skipped_warning(servers),
        f"dcode: warning: {hooks}" if hooks else None,
    ]
    return [line for line in lines if line]


def exec_server(
    settings: Settings, host: str, port: int, token: str | None, model_flags: dict[str, str | None]
) -> None:
    """Become the server (``execve``): its signals and exit status are this command's."""
    where = state_dir(settings)
    ensure_private_dir(where)
    env = server_env(settings, dict(os.environ), model_flags, token)
    os.chdir(where)
    os.execve(sys.executable, server_argv(host, port), env)
