"""What an untrusted project's ``.dcode/config.toml`` may set.

An allowlist, not a denylist: a key that is not named here (today's ``base_url``,
``[providers.*]``, ``pass_env``, and any key added to dcode later) is ignored until the user
trusts the project, so a new setting is safe by default. The keys allowed are the ones that
cannot widen trust:

- ``max_turns``, ``theme``, ``api`` (the wire protocol to the same endpoint), and
  ``[models."…"]`` profile tables, except ``image_transport = "files"`` (uploading the user's
  images to be kept remotely is the user's choice);
- ``approve``, only to a mode no looser than the user's own choice (flags, environment, user
  config, or the surface's default: manual in the TUI, edits headless);
- ``model``, only when it keeps requests and keys where the user's own settings send them: the
  same provider, or a preset or user-configured provider when the user set no base URL (which
  would otherwise receive another provider's key);
- ``[sandbox]``, only to confine more: a mode at least as strict as the user's own
  (``off`` < ``workspace-write`` < ``read-only``), and ``network = false``.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from dcode.sandbox.modes import SandboxMode, at_least_as_strict
from dcode.settings.trust import TrustState
from dcode.settings.values import STRICTNESS, ApprovalMode, IgnoredSetting, Settings

SAFE_KEYS = frozenset({"max_turns", "theme", "api", "models"})
_REASONS = {
    "base_url": "changes where requests and your key go",
    "pass_env": "shows environment variables to the shell",
    "mcp": "runs MCP tools without asking, or changes their time limits",
    "fetch": "lets the model fetch URLs from these sites without asking",
    "providers.base_url": "changes where requests and keys go",
    "providers.api_key_env": "sends another environment variable as the key",
    "models.image_transport": "uploads your images to the provider, which keeps them for days",
}
UNTRUSTED = "only your own config may set it until you trust the project"


def gate(
    data: dict[str, object], mine: Settings, default_approve: ApprovalMode
) -> tuple[dict[str, object], list[IgnoredSetting]]:
    """Split a (validated) project table into what applies and what is ignored, and why.

    ``mine`` is the user's own settings (user config, environment, flags) without the project.
    """
    allowed: dict[str, object] = {}
    ignored: list[IgnoredSetting] = []
    for key, value in data.items():
        if key == "models" and isinstance(value, dict):
            tables, refused = _model_tables(value)
            allowed[key] = tables
            ignored.extend(refused)
            continue
        if key == "sandbox" and isinstance(value, dict):
            allowed[key], refused = _sandbox_table(value, mine)
            ignored.extend(refused)
            continue
        reason = _refusal(key, value, mine, default_approve)
        if reason is None:
            allowed[key] = value
        else:
            ignored.extend(
                IgnoredSetting(name, item, _REASONS.get(_kind(name), reason))
                for name, item in _flatten(key, value)
            )
    return allowed, ignored


def _model_tables(tables: dict[str, object]) -> tuple[dict[str, object], list[IgnoredSetting]]:
    """The profile tables, less ``image_transport = "files"``: it would upload the user's images
    to the provider, where they stay for days, which only the user may choose."""
    kept: dict[str, object] = {}
    refused: list[IgnoredSetting] = []
    for spec, table in tables.items():
        if isinstance(table, dict) and table.get("image_transport") == "files":
            refused.append(
                IgnoredSetting(
                    f"models.{spec}.image_transport", "files", _REASONS["models.image_transport"]
                )
            )
            table = {name: item for name, item in table.items() if name != "image_transport"}
        kept[spec] = table
    return kept, refused


def _sandbox_table(
    table: dict[str, object], mine: Settings
) -> tuple[dict[str, object], list[IgnoredSetting]]:
    """What of ``[sandbox]`` confines at least as much as the user's own settings."""
    kept: dict[str, object] = {}
    refused: list[IgnoredSetting] = []
    for key, value in table.items():
        match key:
            case "mode" if value in {mode.value for mode in SandboxMode} and at_least_as_strict(
                SandboxMode(value), mine.sandbox.mode
            ):
                kept[key] = value
            case "mode":
                refused.append(
                    IgnoredSetting(
                        "sandbox.mode",
                        value,
                        f"not stricter than {mine.sandbox.mode.value!r}, your own choice",
                    )
                )
            case "network" if value is False or value == mine.sandbox.network:
                kept[key] = value
            case "network":
                refused.append(
                    IgnoredSetting(
                        "sandbox.network", value, "lets sandboxed commands use the network"
                    )
                )
            case _:
                refused.append(
                    IgnoredSetting(
                        f"sandbox.{key}", value, "not a sandbox setting a project may make"
                    )
                )
    return kept, refused


def _kind(dotted: str) -> str:
    """``providers.corp.base_url`` -> ``providers.base_url``: what a provider setting is."""
    parts = dotted.split(".")
    return f"{parts[0]}.{parts[-1]}" if parts[0] == "providers" and len(parts) == 3 else dotted


def _refusal(key: str, value: object, mine: Settings, default_approve: ApprovalMode) -> str | None:
    match key:
        case "approve":
            theirs = ApprovalMode(str(value))
            own = mine.approve or default_approve
            if STRICTNESS.index(theirs) <= STRICTNESS.index(own):
                return None
            whose = "your own choice" if mine.approve else "the default"
            return f"looser than {own.value!r}, {whose}"
        case "model":
            return model_refusal(str(value), mine)
        case _ if key in SAFE_KEYS:
            return None
        case "permissions":
            return None  # deny and ask apply at once; load_settings holds back the allow rules
        case "providers":
            return "changes a provider's settings"
        case _:
            return _REASONS.get(key, UNTRUSTED)


def model_refusal(spec: str, mine: Settings) -> str | None:
    """Why an untrusted source may not choose ``spec``, or None when it keeps requests and
    keys where ``mine`` (the user's own settings) sends them. Project agents ask this too."""
    from dcode.settings.presets import PROVIDERS

    provider, current = _provider_of(spec), _provider_of(mine.model)
    if provider == current:
        return None
    if mine.base_url:
        return f"would send the {provider} key to your base URL"
    if provider in PROVIDERS or provider in mine.providers:
        return None
    return f"{provider!r} is not a provider you have set up"


def _provider_of(spec: str) -> str:
    provider, sep, _ = spec.strip().partition(":")
    return provider.lower() if sep else "openai"


def _flatten(key: str, value: object) -> Iterator[tuple[str, object]]:
    if isinstance(value, dict) and value:
        for inner, item in value.items():
            yield from _flatten(f"{key}.{inner}", item)
    else:
        yield key, value


def ignored_keys(settings: Settings) -> str:
    """The project settings left out, named as the file spells them: ``approve, base_url``.
    Allow rules and hooks are not among them: each has its own line."""
    return ", ".join(item.key for item in settings.ignored if _plain(item.key))


RULES_KEY = "permissions.allow"


def is_hook_key(key: str) -> bool:
    """A project's hooks among the settings left out (``hooks`` of its config, ``hooks.EVENT``
    of its Claude settings): ``settings.skipped_hooks`` lists them, and their own line says so."""
    return key == "hooks" or key.startswith("hooks.")


def _plain(key: str) -> bool:
    return key != RULES_KEY and not is_hook_key(key)


def ignored_warning(settings: Settings) -> str | None:
    """The one line headless prints when the project's config was partly ignored."""
    if not any(_plain(item.key) for item in settings.ignored):
        return None
    keys = ignored_keys(settings)
    changed = ", changed since you trusted it" if settings.trust is TrustState.CHANGED else ""
    return (
        f"dcode: warning: ignoring settings from the untrusted project config {settings.project_config}{changed}: "
        f"{keys}; to apply them, trust the project with `dcode trust {shlex.quote(str(settings.workspace))}`"
    )


def ignored_rules_warning(settings: Settings) -> str | None:
    """The one line headless prints when the project's allow rules wait for trust."""
    if not settings.waiting_rules:
        return None
    rules = ", ".join(f"{rule.text} ({rule.source})" for rule in settings.waiting_rules)
    return (
        f"dcode: warning: ignoring the untrusted project's allow rules: {rules}; "
        f"to apply them, trust the project with `dcode trust {shlex.quote(str(settings.workspace))}`"
    )
