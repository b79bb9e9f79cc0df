"""The MCP servers to start, in the ``{"mcpServers": {NAME: {...}}}`` format users already have.

Sources, later ones winning for the same name: ``$DCODE_HOME/mcp.json`` (the user's),
``{project}/.mcp.json`` (the project's: started only once approved, see ``approvals``), then
each ``--mcp-config FILE`` in order. A file that cannot be read or parsed, or a server entry
that is wrong, is one problem line naming the file and what is wrong; everything else loads.

``${VAR}`` and ``${VAR:-default}`` are expanded in ``args``, ``env``, ``url`` and ``headers``
(a variable that is not set, without a default, becomes empty, and the file gets a problem line
naming it; the server still loads).

Standard library only: ``dcode --help`` may import this.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

USER_FILE = "mcp.json"
PROJECT_FILE = ".mcp.json"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"
    SSE = "sse"


class Scope(StrEnum):
    USER = "user"
    PROJECT = "project"
    FLAG = "flag"  # --mcp-config


@dataclass(frozen=True, slots=True)
class ServerConfig:
    name: str
    transport: Transport
    source: Path
    scope: Scope
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    """Variables the file names that were not set (and had no default)."""

    @property
    def target(self) -> str:
        """What the server is: its command line, or its URL (what the trust dialog lists)."""
        if self.transport is Transport.STDIO:
            import shlex

            return shlex.join([self.command, *self.args])
        return self.url


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One file as read: its servers, and what was wrong with it (one line each)."""

    path: Path
    scope: Scope
    servers: tuple[ServerConfig, ...] = ()
    problems: tuple[str, ...] = ()
    data: bytes = b""


def expand(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """``text`` with ``${VAR}`` and ``${VAR:-default}`` replaced; unset names go to ``missing``."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None:
            missing.append(name)
        return ""

    return _VARIABLE.sub(one, text)


def read_file(path: Path, scope: Scope, env: Mapping[str, str]) -> ConfigFile | None:
    """The file at ``path`` (None when there is none)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ConfigFile(path, scope, problems=(f"{path}: cannot read it: {exc.strerror or exc}",))
    return parse(path, scope, data, env)


def parse(path: Path, scope: Scope, data: bytes, env: Mapping[str, str]) -> ConfigFile:
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return ConfigFile(path, scope, problems=(f"{path}: not UTF-8 text",), data=data)
    except json.JSONDecodeError as exc:
        return ConfigFile(path, scope, problems=(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",), data=data)
    table = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(table, dict):
        return ConfigFile(path, scope, problems=(f'{path}: expected {{"mcpServers": {{NAME: {{...}}}}}}',), data=data)
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for name, entry in table.items():
        try:
            server = _server(name, entry, path, scope, env)
        except ValueError as exc:
            problems.append(f"{path}: server {name!r}: {exc}")
            continue
        servers.append(server)
        if server.missing:
            unset = ", ".join(f"${{{v}}}" for v in server.missing)
            problems.append(f"{path}: server {name!r}: {unset} {'is' if len(server.missing) == 1 else 'are'} not set (used as empty)")
    return ConfigFile(path, scope, tuple(servers), tuple(problems), data)


def _server(name: str, entry: Any, path: Path, scope: Scope, env: Mapping[str, str]) -> ServerConfig:
    if not name or not isinstance(entry, dict):
        raise ValueError("must be an object")
    kind = entry.get("type") or entry.get("transport") or ("stdio" if "command" in entry else "http" if "url" in entry else "")
    kind = {"streamable_http": "http", "streamable-http": "http"}.get(kind, kind)
    if kind not in Transport.__members__.values():
        raise ValueError(f"type {kind!r} is not one of stdio, http, sse" if kind else "needs a command (stdio) or a url (http, sse)")
    transport = Transport(kind)
    missing: list[str] = []
    if transport is Transport.STDIO:
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("a stdio server needs a command")
        args = _strings(entry.get("args", []), "args")
        env_table = _table(entry.get("env", {}), "env")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("cwd must be a string")
        return ServerConfig(
            name,
            transport,
            path,
            scope,
            command=expand(command, env, missing),
            args=tuple(expand(a, env, missing) for a in args),
            env={k: expand(v, env, missing) for k, v in env_table.items()},
            cwd=cwd,
            missing=tuple(dict.fromkeys(missing)),
        )
    url = entry.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError(f"an {transport.value} server needs a url")
    headers = _table(entry.get("headers", {}), "headers")
    expanded = expand(url, env, missing)
    if not expanded.startswith(("http://", "https://")):
        raise ValueError(f"url {expanded!r} is not an http:// or https:// URL")
    return ServerConfig(
        name,
        transport,
        path,
        scope,
        url=expanded,
        headers={k: expand(v, env, missing) for k, v in headers.items()},
        missing=tuple(dict.fromkeys(missing)),
    )


def _strings(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of strings")
    return value


def _table(value: Any, key: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{key} must be an object of strings")
    return value


@dataclass(frozen=True, slots=True)
class McpSources:
    """Every file read, in order; ``servers`` is the merged view (a later file wins a name)."""

    files: tuple[ConfigFile, ...] = ()

    @property
    def problems(self) -> list[str]:
        return [p for f in self.files for p in f.problems]

    @property
    def project(self) -> ConfigFile | None:
        return next((f for f in self.files if f.scope is Scope.PROJECT), None)

    def servers(self, *, include_project: bool = True) -> dict[str, ServerConfig]:
        merged: dict[str, ServerConfig] = {}
        for file in self.files:
            if file.scope is Scope.PROJECT and not include_project:
                continue
            for server in file.servers:
                merged[server.name] = server
        return merged


def load_sources(home: Path, workspace: Path, extra: tuple[Path, ...] = (), env: Mapping[str, str] | None = None) -> McpSources:
    """The user's file, the project's, then ``extra`` (``--mcp-config``; a missing one is a problem)."""
    import os

    env = os.environ if env is None else env
    files: list[ConfigFile] = []
    for path, scope in ((home / USER_FILE, Scope.USER), (workspace / PROJECT_FILE, Scope.PROJECT)):
        if (file := read_file(path, scope, env)) is not None:
            files.append(file)
    for path in extra:
        file = read_file(path, Scope.FLAG, env)
        files.append(file if file is not None else ConfigFile(path, Scope.FLAG, problems=(f"{path}: no such file (--mcp-config)",)))
    return McpSources(tuple(files))
