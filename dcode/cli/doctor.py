"""``dcode doctor``: what dcode will use, which figures are guesses, and what is missing."""

from __future__ import annotations

import shutil
import sys
from dataclasses import fields
from typing import TYPE_CHECKING

from dcode.settings.config import ConfigError, Settings
from dcode.terminal_text import for_stream

if TYPE_CHECKING:
    from dcode.models.factory import ResolvedModel


def _print(line: str) -> None:
    """A line of the report: it quotes servers (their names, what they say of a model, their
    errors), so on a terminal it is made safe first."""
    print(for_stream(line, sys.stdout))


def run_doctor(settings: Settings, *, check: bool = False, ping: bool = False) -> int:
    from dcode.models.factory import resolve_model
    from dcode.models.media_support import GUESSED_MARK, guessed_summary

    problems = 0
    _print(f"dcode home   {settings.home}")
    _print(f"workspace    {settings.workspace}")
    _print(f"config files {', '.join(map(str, settings.sources)) or '(none)'}")
    problems += _check_sessions(settings)
    try:
        resolved = resolve_model(settings)
    except ConfigError as exc:
        _print(f"model        {settings.model}: ERROR {exc}")
        return 1
    endpoint, profile = resolved.endpoint, resolved.profile
    _print(f"model        {resolved.spec} via {endpoint.base_url} ({endpoint.api.value} API)")
    _print(
        f"api key      {'from ' + endpoint.key_env if endpoint.key_env and endpoint.api_key != 'not-needed' else 'none (not required here)'}"
    )
    _print(f"profile      source: {profile.source}")
    if (said := _server_line(settings, resolved)) is not None:
        _print(f"  its server   {said}")
    for item in fields(profile):
        if item.name in {"guessed", "source"}:
            continue
        value = getattr(profile, item.name)
        mark = f"  {GUESSED_MARK} guessed" if item.name in profile.guessed else ""
        _print(f"  {item.name:<20} {value}{mark}")
    if legend := guessed_summary(resolved.spec, profile, settings.user_config):
        _print(f"  {legend}")
    _print(f"prompt cache {_cache_key_line(resolved)}")
    _print(f"images       {_transport_line(settings, resolved)}")
    for tool, purpose in (
        ("rg", "fast grep"),
        ("git", "branch and status"),
        ("wl-paste", "Wayland clipboard images"),
        ("xclip", "X11 clipboard images"),
    ):
        _print(f"tool         {tool:<9} {'found' if shutil.which(tool) else 'missing'} ({purpose})")
    _print(f"video        {_video_line()}")
    problems += _sandbox(settings)
    if check:
        problems += _check_connection(settings, resolved)
    if ping:
        problems += _ping(settings, resolved)
    return 1 if problems else 0


def _server_line(settings: Settings, resolved: ResolvedModel) -> str | None:
    """What the model's server said of it (Ollama, LM Studio, vLLM, OpenRouter), as kept."""
    from dcode.models.discovery import ModelInfoCache, dialect

    spec = resolved.endpoint.spec
    if dialect(spec.provider) is None:
        return None
    found, _fresh = ModelInfoCache(settings.home).get(resolved.endpoint.base_url, spec.model)
    if found is None:
        return "said nothing of this model (asked again within the hour); the figures below are presets or guesses"
    said = ", ".join(f"{name} {value}" for name, value in sorted(found.values.items()))
    return f"{found.source}: {said} (kept a week in {settings.home / 'model_info.json'})"


def _cache_key_line(resolved: ResolvedModel) -> str:
    """Whether requests carry ``prompt_cache_key``, and why."""
    where = f'[models."{resolved.spec}"]'
    if resolved.prompt_cache_key:
        why = (
            "OpenAI's own endpoint"
            if resolved.profile.prompt_cache_key is None
            else "prompt_cache_key = true in config.toml"
        )
        return f"prompt_cache_key sent (the session id; {why})"
    if resolved.profile.prompt_cache_key is False:
        return "prompt_cache_key not sent (prompt_cache_key = false in config.toml)"
    return f"prompt_cache_key not sent (set prompt_cache_key = true under {where} if this server takes it)"


def _transport_line(settings: Settings, resolved: ResolvedModel) -> str:
    """How requests carry images, and how many of this key's uploads dcode keeps."""
    from dcode.media.uploads.index import Scope, UploadIndex
    from dcode.models.image_transport import transport_line, why_transport

    endpoint = resolved.endpoint
    why = why_transport(
        endpoint.spec.provider, endpoint.base_url, endpoint.api, resolved.profile.image_transport
    )
    line = transport_line(resolved.image_transport, why, resolved.spec)
    if resolved.image_transport != "files":
        return line
    try:
        kept = len(
            UploadIndex(settings.home).mappings(Scope.of(endpoint.base_url, endpoint.api_key))
        )
    except OSError as exc:
        return f"{line}; the upload index cannot be read: {exc.strerror or exc}"
    return f"{line}; {kept} uploaded for this key (dcode files list)"


def _video_line() -> str:
    """Whether read_file can sample a video's frames here, and if not, how to make it so."""
    import sys

    from dcode.media.video import video_support

    why = video_support()
    if why is not None:
        return f"frame sampling off: {why}"
    av = sys.modules["av"]
    ffmpeg = getattr(av, "ffmpeg_version_info", None) or "?"
    return f"frame sampling works (PyAV {av.__version__}, FFmpeg {ffmpeg})"


def _sandbox(settings: Settings) -> int:
    """Whether the configured sandbox can start here; a sandbox that is on but cannot start is a
    problem (every shell command would be refused), one that is off is only a note."""
    from dcode.sandbox.probe import availability

    found = availability()
    chosen = settings.sandbox.describe()
    if found.works:
        _print(f"sandbox      {chosen}; {found.kind} works here ({found.program})")
        return 0
    if settings.sandbox.on:
        _print(f"sandbox      {chosen}: ERROR shell commands are refused: {found.problem}")
        return 1
    _print(f"sandbox      {chosen}; not available here: {found.problem}")
    return 0


def _check_sessions(settings: Settings) -> int:
    from dcode.agent.store import open_store
    from dcode.agent.store.base import SessionDatabaseError

    store = open_store(settings)
    try:
        count = store.check()
    except SessionDatabaseError as exc:
        _print(f"sessions     ERROR {exc}")
        return 1
    if count is None:
        _print(f"sessions     {store.location} (none yet)")
        return 0
    _print(f"sessions     {store.location} ({count} session{'s' if count != 1 else ''})")
    return 0


def _ping(settings: Settings, resolved: ResolvedModel) -> int:
    """One tiny request to the model: the time it took and what it said, or why it failed."""
    from dcode.models.connection import ping_model

    result = ping_model(resolved, settings)
    if result.ok:
        _print(
            f"ping         ok: {resolved.spec} answered in {result.seconds:.2f} s: {result.said}"
        )
        return 0
    _print(f"ping         FAILED after {result.seconds:.2f} s: {result.said}")
    return 1


def _check_connection(settings: Settings, resolved: ResolvedModel) -> int:
    from dcode.models.connection import check_connection

    ok, message = check_connection(resolved)
    _print(f"connection   {'ok' if ok else 'FAILED'}: {message}")
    return 0 if ok else 1
