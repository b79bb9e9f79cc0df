"""The models ``/model`` offers to switch to, without the user remembering their spellings.

Three sources, most relevant first: the models recent sessions used; the one running and those
the config names (the default ``model``, each ``[models."…"]`` table that names one model); and
each preset provider's well-known models. A provider nobody listed a model for (a
``[providers.*]`` table, vLLM, LM Studio) is offered as ``provider:``, for the user to finish.
Each says what would go wrong (no API key) and which profile figures dcode would guess. Light:
no langchain; it reads the kept model facts, so call it off the UI thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from dcode.models.spec import parse_spec, resolve_endpoint
from dcode.settings.config import ConfigError, Settings
from dcode.settings.presets import PROVIDERS

RECENT_LIMIT = 8


class ModelOrigin(StrEnum):
    RECENT = "recent"
    CONFIGURED = "configured"
    PRESET = "preset"


@dataclass(frozen=True, slots=True)
class ModelChoice:
    spec: str
    """``provider:model``; only ``provider:`` when the model name is for the user to type."""
    origin: ModelOrigin
    problem: str = ""
    """Why switching to it would fail as things stand (e.g. no API key), else empty."""
    guessed: str = ""
    """The profile figures dcode would guess for it (``image_inputs = false, …``), else empty."""

    @property
    def partial(self) -> bool:
        return self.spec.endswith(":")


def model_choices(
    settings: Settings,
    recent: Iterable[str],
    *,
    default: str | None = None,
    env: dict[str, str] | None = None,
) -> list[ModelChoice]:
    """Every model to offer, each once (in its most relevant place), in the order to show.

    ``settings`` are the ones in effect (their ``model`` is the one running); ``recent`` is the
    models of past sessions, newest first; ``default`` the configured model, when it differs.
    """
    offered = _first(((spec, ModelOrigin.RECENT) for spec in recent), RECENT_LIMIT)
    offered += [
        (settings.model, ModelOrigin.CONFIGURED),
        (default or settings.model, ModelOrigin.CONFIGURED),
    ]
    offered += [
        (key, ModelOrigin.CONFIGURED) for key in settings.model_overrides if not _is_pattern(key)
    ]
    for name, preset in PROVIDERS.items():
        offered += [(f"{name}:{model}", ModelOrigin.PRESET) for model in preset.models]
    choices: dict[str, ModelChoice] = {}
    for raw, origin in offered:
        spec = _normal(raw)
        if spec is not None and spec not in choices:
            trial = _trial(settings, spec)
            choices[spec] = ModelChoice(spec, origin, _problem(trial, env), _guessed(trial))
    listed = {spec.partition(":")[0] for spec in choices}
    unlisted = [(name, ModelOrigin.CONFIGURED) for name in settings.providers]
    unlisted += [
        (name, ModelOrigin.PRESET) for name, preset in PROVIDERS.items() if not preset.models
    ]
    for name, origin in unlisted:
        provider = name.lower()
        if provider not in listed:
            listed.add(provider)
            choices[f"{provider}:"] = ModelChoice(f"{provider}:", origin)
    return list(choices.values())


def _first(offered: Iterable[tuple[str, ModelOrigin]], limit: int) -> list[tuple[str, ModelOrigin]]:
    """The first ``limit`` distinct models of ``offered``."""
    seen: dict[str, tuple[str, ModelOrigin]] = {}
    for spec, origin in offered:
        normal = _normal(spec)
        if normal is not None and normal not in seen:
            seen[normal] = (spec, origin)
            if len(seen) == limit:
                break
    return list(seen.values())


def _normal(spec: str) -> str | None:
    """``spec`` as the engine spells it (``gpt-5.1`` is ``openai:gpt-5.1``), or None if it is none."""
    try:
        return parse_spec(spec).text
    except ConfigError:
        return None


def _is_pattern(key: str) -> bool:
    """A ``[models."*:qwen3*"]`` table gives profiles to many models; it names none to pick."""
    return any(char in key for char in "*?[")


def _trial(settings: Settings, spec: str) -> Settings:
    """The settings a switch to ``spec`` runs with: it keeps ``--base-url`` only for the same model."""
    return replace(
        settings, model=spec, base_url=settings.base_url if spec == settings.model else None
    )


def _problem(trial: Settings, env: dict[str, str] | None) -> str:
    """What switching would say now."""
    try:
        resolve_endpoint(trial, env)
    except ConfigError as exc:
        return str(exc)
    return ""


def _guessed(trial: Settings) -> str:
    """The figures its profile would guess (the profile as kept: no server is asked)."""
    from dcode.models.factory import model_profile
    from dcode.models.media_support import assumed

    try:
        return assumed(model_profile(parse_spec(trial.model), trial))
    except ConfigError:
        return ""
