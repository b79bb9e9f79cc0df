"""Settings: defaults < user config < project config < environment < CLI flags.

``DCODE_HOME`` (default ``~/.dcode``) holds ``config.toml``, the sessions database, the prompt
history and the attachments. A project may add ``.dcode/config.toml`` at its workspace root;
until the user trusts the project, only the keys that cannot widen trust apply from it
(``project_gate``), and the others are listed in ``Settings.ignored``.
This module is imported by ``dcode --help``, so it stays free of heavy imports.
"""

# Any: tomllib's tables are untyped; _coerce checks each value that dataclasses.replace takes

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from dcode.regular_files import CONFIG_BYTES, TooLarge
from dcode.sandbox.modes import BadSetting, SandboxMode, SandboxSettings, apply_table
from dcode.settings.compaction_triggers import EXPECTED as THRESHOLD_EXPECTED
from dcode.settings.compaction_triggers import Threshold
from dcode.settings.database import DATABASE_URL_ENV, database_location, is_postgres_url
from dcode.settings.hook_sources import HookCommand, HooksError, gather_hooks, table_hooks
from dcode.settings.permission_sources import (
    CLAUDE_PROJECT_FILES,
    RulesError,
    flag_values,
    table_rules,
)
from dcode.settings.private_files import write_private
from dcode.settings.trust import ProjectFiles, TrustState, TrustStore

# The values are defined in ``values``; the rest of dcode imports them from here, with the loader.
from dcode.settings.values import DEFAULT_MODEL as DEFAULT_MODEL
from dcode.settings.values import PROJECT_DIR as PROJECT_DIR
from dcode.settings.values import STRICTNESS as STRICTNESS
from dcode.settings.values import (
    ApprovalMode,
    AsyncAgentConfig,
    ConfigError,
    IgnoredSetting,
    McpSettings,
    ProviderOverride,
    ReasoningEffort,
    Settings,
    WireApi,
)

_MCP_CLI = {"mcp_configs": "configs", "no_mcp": "enabled", "trust_project_mcp": "trust_project"}
_RULE_FLAGS = ("allowed_tools", "disallowed_tools")
_OWN_CLI = {*_MCP_CLI, *_RULE_FLAGS, "sandbox", "add_dirs"}
"""Flags applied by their own code rather than as scalar settings."""


_SCALAR_KEYS = {
    "model": str,
    "base_url": str,
    "api": WireApi,
    "approve": ApprovalMode,
    "max_turns": int,
    "budget_usd": float,
    "budget_tokens": int,
    "theme": str,
    "bell": bool,
    "effort": ReasoningEffort,
    "connect_timeout": float,
    "request_timeout": float,
    "stall_timeout": float,
    "retry_budget": float,
    "max_retries": int,
    "compact_at": Threshold,
    "compact_keep": Threshold,
    "truncate_at": Threshold,
    "task_depth": int,
    "task_concurrency": int,
}

_ENVIRONMENT = {
    "DCODE_MODEL": "model",
    "DCODE_BASE_URL": "base_url",
    "DCODE_API": "api",
    "DCODE_APPROVE": "approve",
    "DCODE_EFFORT": "effort",
    "DCODE_MAX_RETRIES": "max_retries",
    "DCODE_CONNECT_TIMEOUT": "connect_timeout",
    "DCODE_REQUEST_TIMEOUT": "request_timeout",
    "DCODE_STALL_TIMEOUT": "stall_timeout",
    "DCODE_RETRY_BUDGET": "retry_budget",
}

_ZERO_ALLOWED = {"max_retries"}
_MAXIMUM = {"task_depth": 2}
_TABLE_KEYS = {"providers", "models", "mcp", "fetch", "sandbox", "permissions", "hooks"}
_LIST_KEYS = {"pass_env"}
_USER_ONLY_KEYS = {"database_url", "async_agents", "budget_usd", "budget_tokens"}
"""Read from the user's own config only; a project's (trusted or not) is ignored: a project may
not choose where its sessions go, nor set or raise what they may spend."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def env_var(key: str) -> str:
    """The environment variable that sets ``key`` (``request_timeout`` -> ``DCODE_REQUEST_TIMEOUT``)."""
    return next(var for var, name in _ENVIRONMENT.items() if name == key)


def dcode_home(env: dict[str, str] | None = None) -> Path:
    source: Mapping[str, str] = os.environ if env is None else env
    raw = source.get("DCODE_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".dcode"


def load_settings(
    *,
    workspace: Path | None = None,
    cli: Mapping[str, object] | None = None,
    env: dict[str, str] | None = None,
    default_approve: ApprovalMode = ApprovalMode.MANUAL,
) -> Settings:
    """Merge every source in precedence order; raise ConfigError on the first bad value.

    The project's file is checked whole, but applied whole only when the user has trusted the
    project; otherwise only what ``project_gate`` allows applies. ``default_approve`` is the
    mode the caller falls back to (manual in the TUI, edits headless), which an untrusted
    project may not loosen.
    """
    env = dict(os.environ) if env is None else env
    home = dcode_home(env)
    workspace = (workspace or Path.cwd()).resolve()
    settings = Settings(home=home, workspace=workspace)
    sources: list[Path] = []
    if settings.user_config.is_file():
        settings = _apply_file(settings, settings.user_config, _read_text(settings.user_config))
        sources.append(settings.user_config)
    env_values = {key: env[var] for var, key in _ENVIRONMENT.items() if env.get(var)}
    cli_values = {
        key: value
        for key, value in (cli or {}).items()
        if value is not None and key not in _OWN_CLI
    }
    trust, digest = TrustState.NONE, None
    waiting_hooks: tuple[HookCommand, ...] = ()
    ignored: tuple[IgnoredSetting, ...] = ()
    files = _project_files(settings)
    if files is not None:
        trust, digest = TrustStore(home).state(files), files.digest
    text = files.contents.get(_relative(settings.project_config, workspace)) if files else None
    if files is not None and text is not None:
        path = settings.project_config
        if len(text) > CONFIG_BYTES:
            raise ConfigError(f"{path}: cannot read it: {TooLarge(path, CONFIG_BYTES).strerror}")
        decoded = text.decode("utf-8", errors="replace")
        trusted = _apply_file(settings, path, decoded)  # every key is checked, trusted or not
        if trust is TrustState.TRUSTED:
            settings = trusted
        else:
            waiting_hooks = tuple(h for h in trusted.hooks if h.project)
            from dcode.settings.project_gate import gate

            mine = _apply_values(
                _apply_values(settings, env_values, origin="environment"),
                cli_values,
                origin="command line",
            )
            theirs = {k: v for k, v in _parse(path, decoded).items() if k not in _USER_ONLY_KEYS}
            allowed, ignored_list = gate(theirs, mine, default_approve)
            settings = _apply_data(settings, allowed, path, decoded)
            ignored = tuple(ignored_list)
        sources.append(path)
    settings = _apply_preferences(settings)
    settings = _apply_values(settings, env_values, origin="environment")
    if url := env.get(DATABASE_URL_ENV):
        if not is_postgres_url(url):
            raise ConfigError(f"{DATABASE_URL_ENV} must be a postgresql:// address")
        settings = replace(settings, database_url=url)
    settings = _apply_values(settings, cli_values, origin="command line")
    if problem := settings.triggers.problem():
        raise ConfigError(problem)
    settings = _apply_mcp_flags(settings, cli or {})
    if sandbox := (cli or {}).get("sandbox"):
        settings = replace(
            settings, sandbox=replace(settings.sandbox, mode=SandboxMode(str(sandbox)))
        )
    settings = _permission_rules(settings, cli or {}, env, trust is TrustState.TRUSTED)
    settings = _hooks(settings, env, waiting_hooks, trusted=trust is TrustState.TRUSTED)
    settings = _add_dirs(settings, (cli or {}).get("add_dirs"))
    return replace(
        settings,
        sources=tuple(sources),
        trust=trust,
        project_digest=digest,
        ignored=ignored + _waiting(settings) + _waiting_hooks(settings),
    )


def _add_dirs(settings: Settings, given: object) -> Settings:
    """``--add-dir``: each an existing directory, resolved, not ``/`` (the sandbox binds each
    writable over its own ``/dev``, ``/proc`` and ``/tmp``); one inside the workspace (or
    inside one named before it) adds nothing and is left out."""
    if not isinstance(given, list | tuple) or not given:
        return settings
    workspace = Path(settings.workspace).resolve()
    found: list[Path] = []
    for item in given:
        path = Path(str(item)).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--add-dir {item}: not a directory")
        real = path.resolve()
        if real == Path(real.anchor):
            raise ConfigError(
                f"--add-dir {item}: not the whole file system (commands would see the machine's /proc, /dev and /tmp)"
            )
        if not any(real == root or root in real.parents for root in (workspace, *found)):
            found = [d for d in found if real not in d.parents]  # a wider one replaces them
            found.append(real)
    return replace(settings, add_dirs=tuple(found))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def _project_files(settings: Settings) -> ProjectFiles | None:
    """The project's trust files as read now (the config is read once, here), or None when it
    has neither a config nor Claude Code's settings."""
    claude = (settings.workspace / name for name in CLAUDE_PROJECT_FILES)
    if not settings.project_config.is_file() and not any(path.is_file() for path in claude):
        return None
    try:
        return ProjectFiles.read(settings.workspace)
    except OSError as exc:
        raise ConfigError(
            f"{settings.project_config}: cannot read the project's files: {exc.strerror or exc}"
        ) from None


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _parse(path: Path, text: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {_describe_toml_error(exc, text)}") from None


def _apply_file(settings: Settings, path: Path, text: str) -> Settings:
    return _apply_data(settings, _parse(path, text), path, text)


def _apply_data(settings: Settings, data: dict[str, object], path: Path, text: str) -> Settings:
    scalars = {
        key: value
        for key, value in data.items()
        if key in _SCALAR_KEYS and (key not in _USER_ONLY_KEYS or path == settings.user_config)
    }
    unknown = sorted(set(data) - set(_SCALAR_KEYS) - _TABLE_KEYS - _LIST_KEYS - _USER_ONLY_KEYS)
    if unknown:
        key = unknown[0]
        raise ConfigError(f"{path} line {_line_of(text, key)}: unknown setting {key!r}")
    try:
        settings = _apply_values(settings, scalars, origin=str(path))
    except ConfigError as exc:
        key = exc.key if isinstance(exc, _ValueError) else ""
        raise ConfigError(f"{path} line {_line_of(text, key)}: {exc}") from None
    if "pass_env" in data:
        settings = replace(settings, pass_env=_env_names(data["pass_env"], path, text))
    if "async_agents" in data:
        settings = replace(settings, async_agents=_async_agents(settings, data, path, text))
    if "database_url" in data and path == settings.user_config:
        settings = replace(settings, database_url=_database_url(data["database_url"], path, text))
    providers = dict(settings.providers)
    for name, table in _table(data, "providers", path, text).items():
        providers[name] = _provider_override(name, table, path, text)
    if "fetch" in data:
        settings = _fetch_table(settings, _table(data, "fetch", path, text), path, text)
    if "sandbox" in data:
        settings = replace(
            settings,
            sandbox=_sandbox_table(
                settings.sandbox, _table(data, "sandbox", path, text), path, text
            ),
        )
    if "permissions" in data:
        settings = _permissions_table(settings, data["permissions"], path, text)
    if "hooks" in data:
        settings = _hooks_table(settings, data["hooks"], path, text)
    if "mcp" in data:
        settings = replace(
            settings,
            mcp=_mcp_table(
                settings.mcp, _table(data, "mcp", path, text), path, text, mine=settings.user_config
            ),
        )
    models = dict(settings.model_overrides)
    for spec, table in _table(data, "models", path, text).items():
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path} line {_line_of(text, spec)}: [models.{spec!r}] must be a table"
            )
        models[spec] = {**models.get(spec, {}), **table}
    return replace(settings, providers=providers, model_overrides=models)


def _table(data: dict[str, object], key: str, path: Path, text: str) -> dict[str, object]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path} line {_line_of(text, key)}: {key!r} must be a table")
    return value


def _mcp_table(
    current: McpSettings, table: dict[str, object], path: Path, text: str, *, mine: Path
) -> McpSettings:
    """``mine``: the user's own config, the only one that may say which variables a project's
    MCP file reads (a project naming them would choose what it is sent)."""
    changes: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{path} line {_line_of(text, key)}"
        if key == "project_env" and path != mine:
            raise ConfigError(
                f"{where}: [mcp] project_env is read from your own config only, not a project's: move it to {mine}"
            )
        if key == "project_env":
            changes[key] = _env_names(value, path, text, key="project_env")
        elif key == "allow":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ConfigError(
                    f'{where}: [mcp] allow must be a list like ["server__tool", "server__*"]'
                )
            changes["allow"] = tuple(dict.fromkeys(value))
        elif key in ("connect_timeout", "call_timeout"):
            changes[key] = _coerce(key, value, float, str(path))
        else:
            raise ConfigError(f"{where}: unknown [mcp] setting {key!r}")
    return replace(current, **changes)


def _permissions_table(settings: Settings, table: object, path: Path, text: str) -> Settings:
    try:
        rules = table_rules(table, str(path), project=path != settings.user_config)
    except RulesError as exc:
        raise ConfigError(
            f"{path} line {_line_of(text, 'permissions')}: {str(exc).removeprefix(str(path) + ': ')}"
        ) from None
    return replace(settings, permission_rules=settings.permission_rules + tuple(rules))


def _permission_rules(
    settings: Settings, cli: Mapping[str, object], env: dict[str, str], trusted: bool
) -> Settings:
    """Every source's rules (``permission_sources.gather``); the project's allow rules
    wait for trust (``waiting_rules``)."""
    from dcode.settings.permission_sources import gather

    user_home = Path(env.get("HOME") or Path.home())
    try:
        applied, waiting = gather(
            settings.permission_rules,
            settings.workspace,
            settings.home,
            user_home,
            cli,
            trusted=trusted,
        )
    except RulesError as exc:
        raise ConfigError(str(exc)) from None
    return replace(settings, permission_rules=tuple(applied), waiting_rules=tuple(waiting))


def _hooks_table(settings: Settings, table: object, path: Path, text: str) -> Settings:
    try:
        found = table_hooks(table, str(path), project=path != settings.user_config)
    except HooksError as exc:
        raise ConfigError(
            f"{path} line {_line_of(text, 'hooks')}: {str(exc).removeprefix(str(path) + ': ')}"
        ) from None
    return replace(settings, hooks=settings.hooks + tuple(found))


def _hooks(
    settings: Settings,
    env: dict[str, str],
    waiting: tuple[HookCommand, ...],
    *,
    trusted: bool,
) -> Settings:
    """Every source's hooks (``hook_sources.gather_hooks``); the project's wait for trust
    (``skipped_hooks``, with those of its config the gate left out)."""
    user_home = Path(env.get("HOME") or Path.home())
    try:
        running, skipped = gather_hooks(
            settings.hooks, settings.workspace, user_home, trusted=trusted
        )
    except HooksError as exc:
        raise ConfigError(str(exc)) from None
    return replace(settings, hooks=tuple(running), skipped_hooks=(*skipped, *waiting))


def _waiting_hooks(settings: Settings) -> tuple[IgnoredSetting, ...]:
    """The hooks of the project's Claude settings as settings the trust question lists (those
    of its config the gate lists itself)."""
    return tuple(
        IgnoredSetting(f"hooks.{hook.event}", hook.command, f"runs this command ({hook.source})")
        for hook in settings.skipped_hooks
        if hook.source != str(settings.project_config)
    )


def _waiting(settings: Settings) -> tuple[IgnoredSetting, ...]:
    """The project's allow rules as settings the trust question lists."""
    return tuple(
        IgnoredSetting("permissions.allow", rule.text, f"runs without asking ({rule.source})")
        for rule in settings.waiting_rules
    )


def _fetch_table(settings: Settings, table: dict[str, object], path: Path, text: str) -> Settings:
    """``settings`` with ``[fetch]`` applied; ``allow_private`` only from the user's own config:
    a project, trusted or not, may not open this machine's network to the model."""
    for key, value in table.items():
        where = f"{path} line {_line_of(text, key)}"
        match key:
            case "allow":
                settings = replace(settings, fetch_allow=_fetch_hosts(value, where, wildcards=True))
            case "allow_private" if path == settings.user_config:
                settings = replace(
                    settings, fetch_private=_fetch_hosts(value, where, wildcards=False)
                )
            case "allow_private":
                raise ConfigError(
                    f"{where}: [fetch] allow_private is read only from your own config ({settings.user_config}), never a project's"
                )
            case _:
                raise ConfigError(f"{where}: unknown [fetch] setting {key!r}")
    return settings


def _sandbox_table(
    current: SandboxSettings, table: dict[str, object], path: Path, text: str
) -> SandboxSettings:
    try:
        return apply_table(current, table)
    except BadSetting as exc:
        raise ConfigError(f"{path} line {_line_of(text, exc.key)}: {exc}") from None


def _fetch_hosts(value: object, where: str, *, wildcards: bool) -> tuple[str, ...]:
    """Hosts in the form ``web_address`` gives a URL's (``Docs.Python.org.`` is
    ``docs.python.org``); ``*.`` before one only where ``wildcards``."""
    from dcode.settings.web_address import BadAddress, canonical_host, host_entry

    example = (
        '["docs.python.org", "*.readthedocs.io"]'
        if wildcards
        else '["localhost:8000", "intranet.example"]'
    )
    name = "allow" if wildcards else "allow_private"
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}: [fetch] {name} must be a list of hosts like {example}")
    hosts: list[str] = []
    for item in value:
        text = item.strip()
        star = "*." if wildcards and text.startswith("*.") else ""
        try:
            hosts.append(
                star + canonical_host(text.removeprefix(star)) if wildcards else host_entry(text)
            )
        except BadAddress as exc:
            raise ConfigError(
                f"{where}: [fetch] {name}: {exc} (a list of hosts like {example})"
            ) from None
    return tuple(dict.fromkeys(hosts))


def _apply_mcp_flags(settings: Settings, cli: Mapping[str, object]) -> Settings:
    mcp = settings.mcp
    if configs := flag_values(cli, "mcp_configs", Path):
        mcp = replace(mcp, configs=tuple(Path(p).expanduser().resolve() for p in configs))
    if cli.get("no_mcp"):
        mcp = replace(mcp, enabled=False)
    if cli.get("trust_project_mcp"):
        mcp = replace(mcp, trust_project=True)
    return replace(settings, mcp=mcp) if mcp is not settings.mcp else settings


def _env_names(value: object, path: Path, text: str, key: str = "pass_env") -> tuple[str, ...]:
    where = f"{path} line {_line_of(text, key)}"
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise ConfigError(
            f'{where}: {key} must be a list of variable names, e.g. {key} = ["GITHUB_TOKEN"]'
        )
    bad = [name for name in value if not _ENV_NAME.match(name)]
    if bad:
        raise ConfigError(f"{where}: {bad[0]!r} is not an environment variable name")
    return tuple(dict.fromkeys(value))


def _database_url(value: object, path: Path, text: str) -> str | None:
    """``database_url``: a ``postgresql://`` address, or "" for the SQLite file."""
    if value == "":
        return None
    if not isinstance(value, str) or not is_postgres_url(value):
        raise ConfigError(
            f"{path} line {_line_of(text, 'database_url')}: database_url must be a postgresql:// address"
        )
    return value


def _async_agents(
    settings: Settings, data: dict[str, object], path: Path, text: str
) -> tuple[AsyncAgentConfig, ...]:
    """``[[async_agents]]``: read from the user's own config only, as the work it sends (and
    the headers, which may carry a token) go to the servers it names."""
    starts = _array_lines(text, "async_agents")
    where = f"{path} line {starts[0] if starts else _line_of(text, 'async_agents')}"
    if path != settings.user_config:
        raise ConfigError(
            f"{where}: [[async_agents]] is read from your own config only, not a project's: move it to {settings.user_config}"
        )
    value = data["async_agents"]
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise ConfigError(f"{where}: async_agents must be [[async_agents]] tables")
    agents = [
        _async_agent(entry, f"{path} line {starts[i] if i < len(starts) else 1}")
        for i, entry in enumerate(value)
    ]
    names = [agent.name for agent in agents]
    if duplicate := next((n for n in names if names.count(n) > 1), None):
        raise ConfigError(f"{where}: two [[async_agents]] are named {duplicate!r}")
    return tuple(agents)


def _array_lines(text: str, key: str) -> list[int]:
    """The line of each ``[[key]]`` header, in order."""
    header = re.compile(rf"^\s*\[\[\s*{re.escape(key)}\s*\]\]")
    return [n for n, line in enumerate(text.splitlines(), start=1) if header.match(line)]


def _async_agent(entry: dict[str, object], where: str) -> AsyncAgentConfig:
    unknown = sorted(set(entry) - {"name", "url", "assistant", "headers"})
    if unknown:
        raise ConfigError(f"{where}: [[async_agents]] has an unknown key {unknown[0]!r}")
    texts = {key: entry.get(key) for key in ("name", "url", "assistant")}
    missing = [key for key, value in texts.items() if not isinstance(value, str) or not value]
    if missing:
        raise ConfigError(f"{where}: every [[async_agents]] needs {missing[0]} (text)")
    if not str(texts["url"]).startswith(("http://", "https://")):
        raise ConfigError(f"{where}: [[async_agents]] url must be an http:// or https:// address")
    headers = entry.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ConfigError(f"{where}: [[async_agents]] headers must be a table of text values")
    return AsyncAgentConfig(
        name=str(texts["name"]),
        url=str(texts["url"]),
        assistant=str(texts["assistant"]),
        headers=dict(headers),
    )


def _provider_override(name: str, table: object, path: Path, text: str) -> ProviderOverride:
    if not isinstance(table, dict):
        raise ConfigError(f"{path} line {_line_of(text, name)}: [providers.{name}] must be a table")
    allowed = {"base_url", "api_key_env", "api"}
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(
                f"{path} line {_line_of(text, key)}: unknown provider setting {key!r}"
            )
        if not isinstance(value, str):
            raise ConfigError(f"{path} line {_line_of(text, key)}: {key!r} must be a string")
    api = table.get("api")
    if api is not None and api not in WireApi.__members__.values():
        raise ConfigError(f"{path} line {_line_of(text, 'api')}: api must be 'chat' or 'responses'")
    return ProviderOverride(
        base_url=table.get("base_url"),
        api_key_env=table.get("api_key_env"),
        api=WireApi(api) if api else None,
    )


class _ValueError(ConfigError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _apply_values(settings: Settings, values: Mapping[str, object], *, origin: str) -> Settings:
    changes: dict[str, Any] = {}
    for key, raw in values.items():
        kind = _SCALAR_KEYS[key]
        changes[key] = _coerce(key, raw, kind, origin)
    return replace(settings, **changes) if changes else settings


def _coerce(key: str, raw: Any, kind: type, origin: str) -> Any:
    try:
        if kind in (ApprovalMode, WireApi, ReasoningEffort):
            return kind(str(raw))
        if kind is Threshold:
            return Threshold.parse(raw)
        if kind is bool:
            if not isinstance(raw, bool):
                raise ValueError
            return raw
        if kind is int:
            if isinstance(raw, bool):
                raise ValueError
            value = int(raw)
            if value < (0 if key in _ZERO_ALLOWED else 1) or value > _MAXIMUM.get(key, value):
                raise ValueError
            return value
        if kind is float:
            if isinstance(raw, bool):
                raise ValueError
            seconds = float(raw)
            if not 0 < seconds < math.inf:
                raise ValueError
            return seconds
        if not isinstance(raw, str):
            raise ValueError
        return raw
    except ValueError:
        expected = (
            f"an integer from 1 to {_MAXIMUM[key]}" if key in _MAXIMUM else _expected(kind, key)
        )
        raise _ValueError(
            key, f"{key} = {raw!r} is not valid ({origin}); expected {expected}"
        ) from None


def _expected(kind: type, key: str = "") -> str:
    if kind in (ApprovalMode, WireApi, ReasoningEffort):
        return " or ".join(repr(member.value) for member in kind)
    if key == "budget_usd":
        return "a positive number of USD"
    return {
        int: "a positive integer",
        float: "a positive number of seconds",
        Threshold: THRESHOLD_EXPECTED,
        bool: "true or false",
    }.get(kind, "a string")


def _describe_toml_error(exc: tomllib.TOMLDecodeError, text: str) -> str:
    message = str(exc)
    if message.endswith("(at end of document)"):
        reason = message.removesuffix("(at end of document)").strip()
        return f"line {max(1, len(text.splitlines()))} (end of file): {reason}"
    match = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if not match:
        return message
    reason = message[: match.start()].strip()
    return f"line {match.group(1)}, column {match.group(2)}: {reason}"


def _line_of(text: str, key: str) -> int:
    pattern = re.compile(
        rf"^\s*[\"']?{re.escape(key)}[\"']?\s*[=\]]|\.\s*[\"']?{re.escape(key)}[\"']?\s*\]"
    )
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line):
            return number
    return 1


def _apply_preferences(settings: Settings) -> Settings:
    """Choices made in the app (``/theme``) persist in preferences.json and beat the config file."""
    prefs = read_preferences(settings)
    theme = prefs.get("theme")
    return replace(settings, theme=theme) if isinstance(theme, str) else settings


def read_preferences(settings: Settings) -> dict[str, object]:
    try:
        data = json.loads(settings.preferences_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_preference(settings: Settings, key: str, value: object) -> None:
    prefs = read_preferences(settings)
    prefs[key] = value
    write_private(settings.preferences_file, json.dumps(prefs, indent=2))


def describe(settings: Settings) -> dict[str, object]:
    """The merged settings as plain data, for ``dcode config show``."""
    out: dict[str, object] = {}
    for item in fields(settings):
        value = getattr(settings, item.name)
        match value:
            case StrEnum():
                out[item.name] = value.value
            case tuple() if item.name in ("permission_rules", "waiting_rules"):
                out[item.name] = [
                    {"effect": r.effect, "rule": r.text, "source": r.source} for r in value
                ]
            case tuple() if item.name in ("hooks", "skipped_hooks"):
                out[item.name] = [
                    {
                        "event": h.event,
                        "matcher": h.matcher,
                        "command": h.command,
                        "source": h.source,
                    }
                    for h in value
                ]
            case tuple() if item.name == "ignored":
                out[item.name] = [
                    {"key": i.key, "value": i.value, "reason": i.reason} for i in value
                ]
            case Path():
                out[item.name] = str(value)
            case str() if item.name == "database_url":
                out[item.name] = database_location(value)  # never its password
            case tuple() if item.name == "async_agents":
                out[item.name] = [
                    {
                        "name": a.name,
                        "url": a.url,
                        "assistant": a.assistant,
                        "headers": sorted(a.headers),
                    }
                    for a in value
                ]  # the headers' names only: a value may be a token
            case SandboxSettings():
                out[item.name] = {"mode": value.mode.value, "network": value.network}
            case McpSettings():
                out[item.name] = {
                    f.name: (
                        [str(v) for v in x] if isinstance(x := getattr(value, f.name), tuple) else x
                    )
                    for f in fields(value)
                }
            case tuple():
                out[item.name] = [str(v) for v in value]
            case dict():
                out[item.name] = {
                    k: (
                        {f.name: getattr(v, f.name) for f in fields(v)}
                        if hasattr(v, "__dataclass_fields__")
                        else v
                    )
                    for k, v in value.items()
                }
            case _:
                out[item.name] = value
    return out
