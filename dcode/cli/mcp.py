"""``dcode mcp list|get|add|remove``, after Claude Code's ``claude mcp``.

``add NAME COMMAND [ARGS...]`` (stdio) or ``add NAME URL`` (streamable HTTP; ``--transport sse``
for the older SSE), with ``-e
KEY=value`` (env) and ``-H "Name: value"`` (headers), into the user's ``$DCODE_HOME/mcp.json``
(``--scope user``, the default) or the project's ``.mcp.json`` (``--scope project``). ``list``
and ``get`` read the files only: listing never starts a server (a project's might not be
approved); with ``--mcp-config FILE`` they show that file's servers too, as a run with it would
start them. Other keys in the files are kept as they were. Standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dcode.mcp.approvals import approval
from dcode.mcp.config import (
    PROJECT_FILE,
    USER_FILE,
    McpSources,
    Scope,
    ServerConfig,
    Transport,
    load_sources,
)
from dcode.mcp.plan import notes, project_env
from dcode.regular_files import read_config
from dcode.settings.config import ConfigError, Settings
from dcode.settings.private_files import ensure_private_dir, write_private
from dcode.settings.trust import TrustState

SCOPES = ("user", "project")


def _file(settings: Settings, scope: str) -> Path:
    if scope not in SCOPES:
        raise ConfigError(f"--scope must be user or project, not {scope!r}")
    return settings.home / USER_FILE if scope == "user" else settings.workspace / PROJECT_FILE


class _AsWritten(dict[str, str]):
    """Every variable "set" to its own reference: the files are shown as written, no secret
    from the environment printed."""

    def get(self, key: str, default: object = None) -> str:
        return f"${{{key}}}"


def _sources(settings: Settings) -> McpSources:
    return load_sources(
        settings.home, settings.workspace, settings.mcp.configs, _AsWritten(), project_env(settings)
    )


def _note(settings: Settings, server: ServerConfig, sources: McpSources) -> str:
    if server.disabled:
        return " (disabled in its file)"
    if server.scope is not Scope.PROJECT:
        return ""
    if server.refused:
        return " (not started: see the problem below)"
    project = sources.project
    state = approval(settings.home, project) if project is not None else TrustState.NONE
    shadows = f" (replaces your own {server.name})" if server.shadows is not None else ""
    return shadows + (
        ""
        if state is TrustState.TRUSTED
        else " (not approved: starts after you approve .mcp.json in dcode)"
    )


def list_servers(settings: Settings) -> str:
    sources = _sources(settings)
    servers = sources.servers(listing=True)
    lines = [
        f"{s.name}: {s.target} ({s.transport.value}, {s.scope.value}){_note(settings, s, sources)}"
        for s in servers.values()
    ]
    lines += [f"problem: {p}" for p in sources.problems]
    return (
        "\n".join(lines)
        if lines
        else f"No MCP servers. Add one with `dcode mcp add NAME COMMAND [ARGS...]` ({settings.home / USER_FILE})."
    )


def get_server(settings: Settings, name: str) -> str:
    sources = _sources(settings)
    server = sources.servers(listing=True).get(name)
    if server is None:
        raise ConfigError(f"no MCP server {name!r}: see `dcode mcp list`")
    rows = [
        ("scope", f"{server.scope.value}{_note(settings, server, sources)}"),
        ("file", str(server.source)),
        ("type", server.transport.value),
    ]
    if server.transport is Transport.STDIO:
        rows += [
            ("command", server.command),
            ("args", " ".join(server.args)),
            *(("env", f"{k}=…") for k in server.env),
        ]
        if server.cwd:
            rows.append(("cwd", server.cwd))
    else:
        rows += [("url", server.url), *(("header", f"{k}: …") for k in server.headers)]
    rows += [("note", note.text) for note in notes(server, project_env(settings))]
    return "\n".join([f"{name}:", *(f"  {label}: {value}" for label, value in rows)])


def add_server(
    settings: Settings,
    name: str,
    target: str,
    args: list[str],
    *,
    transport: str | None,
    scope: str,
    env: list[str],
    headers: list[str],
) -> str:
    """``transport`` None: streamable HTTP for a URL, stdio for anything else."""
    path = _file(settings, scope)
    transport = transport or (
        Transport.HTTP if target.startswith(("http://", "https://")) else Transport.STDIO
    )
    if transport not in Transport.__members__.values():
        raise ConfigError(f"--transport must be stdio, http or sse, not {transport!r}")
    entry: dict[str, object]
    if transport == "stdio":
        entry = {"command": target, "args": args}
        if env:
            entry["env"] = dict(_pair(item, "=", "-e") for item in env)
    else:
        if args:
            raise ConfigError(f"an {transport} server takes a URL and no arguments")
        entry = {"type": transport, "url": target}
        if headers:
            entry["headers"] = dict(_pair(item, ":", "-H") for item in headers)
    document = _read(path)
    servers = _servers(document)
    if name in servers:
        raise ConfigError(
            f"{path}: there is an MCP server {name!r} already; `dcode mcp remove {name}` first"
        )
    servers[name] = entry
    _write(path, document, scope)
    return f"Added the MCP server {name} to {path}"


def remove_server(settings: Settings, name: str, scope: str | None) -> str:
    scopes = [scope] if scope else list(SCOPES)
    for each in scopes:
        path = _file(settings, each)
        document = _read(path) if path.exists() else {}
        servers = _servers(document)
        if name in servers:
            del servers[name]
            _write(path, document, each)
            return f"Removed the MCP server {name} from {path}"
    raise ConfigError(
        f"no MCP server {name!r} in {' or '.join(str(_file(settings, s)) for s in scopes)}"
    )


def _pair(item: str, sep: str, flag: str) -> tuple[str, str]:
    key, found, value = item.partition(sep)
    if not found or not key.strip():
        raise ConfigError(
            f"{flag} {item!r}: expected {'KEY=value' if sep == '=' else 'Name: value'}"
        )
    return key.strip(), value.strip() if sep == ":" else value


def _servers(document: dict[str, object]) -> dict[str, object]:
    """The document's ``mcpServers`` table, added when it has none (``_read`` has checked that
    it is a table)."""
    servers = document.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise TypeError(f"mcpServers is not a table: {servers!r}")
    return servers


def _read(path: Path) -> dict[str, object]:
    try:
        document = json.loads(read_config(path).decode("utf-8"))  # a project's: never a pipe
    except FileNotFoundError:
        return {"mcpServers": {}}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot edit it: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: cannot edit it: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("mcpServers", {}), dict):
        raise ConfigError(f'{path}: expected {{"mcpServers": {{...}}}}')
    return document


def _write(path: Path, document: dict[str, object], scope: str) -> None:
    text = json.dumps(document, indent=2) + "\n"
    if scope == "user":
        ensure_private_dir(path.parent)
        write_private(path, text)
    else:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
