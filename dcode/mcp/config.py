"""The MCP servers to start, in the ``{"mcpServers": {NAME: {...}}}`` format users already have.

Sources, later ones winning for the same name: ``$DCODE_HOME/mcp.json`` (the user's),
``{project}/.mcp.json`` (the project's: started only once approved, see ``approvals``), then
each ``--mcp-config FILE`` in order. A file that cannot be read or parsed, or a server entry
that is wrong, is one problem line naming the file and what is wrong; everything else loads.

Other clients' files mean what they mean there (``dialects``): Gemini CLI's ``url`` is SSE,
VS Code's servers are under ``"servers"``, a server with ``"disabled": true`` does not start.

``${VAR}`` and ``${VAR:-default}`` are expanded in ``command``, ``args``, ``env``, ``url`` and
``headers`` (a variable that is not set, without a default, becomes empty, and the file gets a
problem line naming it; the server still loads). A project's file expands only what
``ProjectEnv`` lets it read: a server of it that names any other variable is not started, with
a problem line naming the variable (a value expanded there would be sent wherever the project
chose: a header, a URL, an argument).

Standard library only: ``dcode --help`` may import this.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from dcode.mcp.dialects import (
    BRACED,
    Dialect,
    Transport,
    dialect_of,
    disabled,
    server_table,
    switched_off,
    text_table,
    transport_of,
    url_of,
)
from dcode.regular_files import read_config

USER_FILE = "mcp.json"
PROJECT_FILE = ".mcp.json"


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
    variables: tuple[str, ...] = ()
    """Every variable the server's entry names, in order (what its approval shows)."""
    refused: tuple[str, ...] = ()
    """The variables a project's file may not read: the server does not start (its fields are
    kept as written, nothing expanded)."""
    shadows: Path | None = None
    """A project's server named like one of the user's own: the user's file. It is another
    server, which the user's ``[mcp] allow`` rules for that name do not cover."""
    disabled: bool = False
    """Turned off in its file (``"disabled": true``): it does not start, and nothing of the
    environment is expanded into it."""
    sandbox: bool = False
    """A stdio server that runs in dcode's sandbox (``"sandbox": true``), as the shell's
    commands do; it does not start where the sandbox cannot."""

    @property
    def starts(self) -> bool:
        return not self.refused and not self.disabled

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

    @property
    def runnable(self) -> tuple[ServerConfig, ...]:
        """The servers that may start (not disabled, none of their variables refused)."""
        return tuple(s for s in self.servers if s.starts)


@dataclass(frozen=True, slots=True)
class ProjectEnv:
    """What a project's file may read from the environment.

    A value it expands goes wherever the project chose (a header, a URL, an argument, a
    server's environment), so it reads only the variables the user lists in ``[mcp]
    project_env`` of their own config, and never one of ``keys`` (the provider keys and
    addresses dcode itself uses; upper case), listed or not. The user's own files and
    ``--mcp-config`` read anything.
    """

    listed: frozenset[str] = frozenset()
    keys: frozenset[str] = frozenset()
    config: str = "config.toml"
    """The user's config, named in the problem line."""

    def is_key(self, name: str) -> bool:
        return name.upper() in self.keys

    def may_read(self, name: str) -> bool:
        return name in self.listed and not self.is_key(name)

    def refusal(self, refused: tuple[str, ...]) -> str:
        """Why a server naming ``refused`` does not start, and what allows it (if anything does)."""
        keys = [name for name in refused if self.is_key(name)]
        others = [name for name in refused if not self.is_key(name)]
        said = []
        if keys:
            said.append(
                f"{references(keys)} {'holds' if len(keys) == 1 else 'hold'} a provider's key or address, which a project's file may never read"
            )
        if others:
            one = len(others) == 1
            said.append(
                f"{references(others)} {'is' if one else 'are'} not in [mcp] project_env in {self.config}; "
                f"list {'it' if one else 'them'} there to let project MCP files read {'it' if one else 'them'}"
            )
        return "not started: " + "; ".join(said)


def references(names: list[str] | tuple[str, ...]) -> str:
    """``${A}, ${B}``: variables as a file names them."""
    return ", ".join(f"${{{name}}}" for name in names)


def _name(match: re.Match[str]) -> str:
    return match.group("name") or match.group("bare")


def named_variables(texts: list[str], pattern: re.Pattern[str] = BRACED) -> tuple[str, ...]:
    """The variables ``texts`` name (expanded or not), each once, in order."""
    return tuple(dict.fromkeys(_name(match) for text in texts for match in pattern.finditer(text)))


def expand(
    text: str, env: Mapping[str, str], missing: list[str], pattern: re.Pattern[str] = BRACED
) -> str:
    """``text`` with ``${VAR}`` and ``${VAR:-default}`` replaced; unset names go to ``missing``."""

    def one(match: re.Match[str]) -> str:
        name, default = _name(match), match.groupdict().get("default")
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None:
            missing.append(name)
        return ""

    return pattern.sub(one, text)


def read_file(
    path: Path, scope: Scope, env: Mapping[str, str], readable: ProjectEnv | None = None
) -> ConfigFile | None:
    """The file at ``path`` (None when there is none)."""
    try:
        data = read_config(path)  # never a named pipe (it would hang the start), never gigabytes
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ConfigFile(path, scope, problems=(f"{path}: cannot read it: {exc.strerror or exc}",))
    return parse(path, scope, data, env, readable)


def parse(
    path: Path,
    scope: Scope,
    data: bytes,
    env: Mapping[str, str],
    readable: ProjectEnv | None = None,
) -> ConfigFile:
    """``readable``: what a project's file may read (default: nothing); other files read all."""
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return ConfigFile(path, scope, problems=(f"{path}: not UTF-8 text",), data=data)
    except json.JSONDecodeError as exc:
        return ConfigFile(
            path,
            scope,
            problems=(
                f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            ),
            data=data,
        )
    table = server_table(document)
    if not isinstance(table, dict):
        return ConfigFile(
            path,
            scope,
            problems=(f'{path}: expected {{"mcpServers": {{NAME: {{...}}}}}}',),
            data=data,
        )
    readable = (readable or ProjectEnv()) if scope is Scope.PROJECT else None
    dialect = dialect_of(path)
    off = switched_off(document, dialect)
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for name, entry in table.items():
        turned_off = disabled(entry) or name in off
        try:
            server = _server(name, entry, path, scope, env, readable, dialect, turned_off)
        except ValueError as exc:
            if not turned_off:  # a server turned off may be half written
                problems.append(f"{path}: server {name!r}: {exc}")
            continue
        servers.append(server)
        if server.refused and readable is not None:
            problems.append(f"{path}: server {name!r}: {readable.refusal(server.refused)}")
        if server.missing:
            unset = ", ".join(f"${{{v}}}" for v in server.missing)
            problems.append(
                f"{path}: server {name!r}: {unset} {'is' if len(server.missing) == 1 else 'are'} not set (used as empty)"
            )
    return ConfigFile(path, scope, tuple(servers), tuple(problems), data)


def _server(
    name: str,
    entry: object,
    path: Path,
    scope: Scope,
    env: Mapping[str, str],
    readable: ProjectEnv | None,
    dialect: Dialect,
    turned_off: bool,
) -> ServerConfig:
    """One entry; ``readable`` None: any variable may be expanded."""
    if not name or not isinstance(entry, dict):
        raise ValueError("must be an object")
    written = _as_written(name, transport_of(entry, dialect), entry, path, scope)
    texts = [
        written.command,
        *written.args,
        *written.env.values(),
        written.url,
        *written.headers.values(),
    ]
    variables = named_variables(texts, dialect.variables)
    if turned_off:  # nothing of the environment goes into a server that does not start
        return replace(written, variables=variables, disabled=True)
    refused = tuple(v for v in variables if readable is not None and not readable.may_read(v))
    if refused:
        return replace(written, variables=variables, refused=refused)
    missing: list[str] = []

    def expanded(text: str) -> str:
        return expand(text, env, missing, dialect.variables)

    server = replace(
        written,
        command=expanded(written.command),
        args=tuple(expanded(a) for a in written.args),
        env={k: expanded(v) for k, v in written.env.items()},
        url=expanded(written.url),
        headers={k: expanded(v) for k, v in written.headers.items()},
        variables=variables,
        missing=tuple(dict.fromkeys(missing)),
    )
    if server.transport is not Transport.STDIO and not server.url.startswith(
        ("http://", "https://")
    ):
        raise ValueError(f"url {server.url!r} is not an http:// or https:// URL")
    return server


def _as_written(
    name: str, transport: Transport, entry: dict[str, object], path: Path, scope: Scope
) -> ServerConfig:
    """The entry checked, nothing expanded yet."""
    if transport is Transport.STDIO:
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("a stdio server needs a command")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("cwd must be a string")
        args = _strings(entry.get("args", []), "args")
        env_table = text_table(entry.get("env", {}), "env")
        sandbox = entry.get("sandbox", False)
        if not isinstance(sandbox, bool):
            raise ValueError("sandbox must be true or false")
        return ServerConfig(
            name,
            transport,
            path,
            scope,
            command=command,
            args=tuple(args),
            env=env_table,
            cwd=cwd,
            sandbox=sandbox,
        )
    url = url_of(entry, transport)
    if not isinstance(url, str) or not url:
        raise ValueError(f"an {transport.value} server needs a url")
    return ServerConfig(
        name,
        transport,
        path,
        scope,
        url=url,
        headers=text_table(entry.get("headers", {}), "headers"),
    )


def _strings(value: object, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of strings")
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

    def servers(
        self, *, include_project: bool = True, listing: bool = False
    ) -> dict[str, ServerConfig]:
        """``listing``: with the servers that do not start (a variable refused, or disabled;
        ``dcode mcp list`` shows them), each where no server that starts has its name: one
        file's server that does not start leaves another file's of that name running."""
        merged: dict[str, ServerConfig] = {}
        for file in self.files:
            if file.scope is Scope.PROJECT and not include_project:
                continue
            for server in file.servers if listing else file.runnable:
                if server.starts or server.name not in merged:
                    merged[server.name] = server
        return merged


def load_sources(
    home: Path,
    workspace: Path,
    extra: tuple[Path, ...] = (),
    env: Mapping[str, str] | None = None,
    readable: ProjectEnv | None = None,
) -> McpSources:
    """The user's file, the project's, then ``extra`` (``--mcp-config``; a missing one is a problem).

    ``readable``: the variables the project's file may expand (default: none)."""
    import os

    env = os.environ if env is None else env
    files: list[ConfigFile] = []
    user = read_file(home / USER_FILE, Scope.USER, env)
    project = read_file(workspace / PROJECT_FILE, Scope.PROJECT, env, readable)
    if user is not None:
        files.append(user)
    if project is not None:
        files.append(_shadowing(project, user))
    for path in extra:
        file = read_file(path, Scope.FLAG, env)
        files.append(
            file
            if file is not None
            else ConfigFile(path, Scope.FLAG, problems=(f"{path}: no such file (--mcp-config)",))
        )
    return McpSources(tuple(files))


def _shadowing(project: ConfigFile, user: ConfigFile | None) -> ConfigFile:
    """``project`` with each server named like one of ``user``'s marked as shadowing it."""
    mine = {server.name for server in user.servers} if user is not None else set()
    if user is None or not any(server.name in mine for server in project.servers):
        return project
    return replace(
        project,
        servers=tuple(
            replace(s, shadows=user.path) if s.name in mine else s for s in project.servers
        ),
    )
