"""Parsing ``provider:model`` and resolving it to an endpoint, a key and a wire protocol."""

from __future__ import annotations

import os
from dataclasses import dataclass

from dcode.settings.config import ConfigError, Settings, WireApi
from dcode.settings.presets import GENERIC_KEY_ENVS, PROVIDERS, ProviderPreset, default_api


class ModelSpecError(ConfigError):
    """The model spec or its credentials are unusable; the message says what to set."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    provider: str
    model: str

    @property
    def text(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True, slots=True)
class Endpoint:
    spec: ModelSpec
    base_url: str
    api: WireApi
    api_key: str
    key_env: str | None


def parse_spec(text: str) -> ModelSpec:
    provider, sep, model = text.strip().partition(":")
    if not sep:
        # A bare model name is an OpenAI model, as users of other tools expect.
        provider, model = "openai", provider
    if not provider or not model:
        raise ModelSpecError(
            f"model spec {text!r} must look like provider:model, e.g. openai:gpt-5.1"
        )
    return ModelSpec(provider.lower(), model)


@dataclass(frozen=True, slots=True)
class Address:
    """Where a model's requests go and on which wire, known without its key."""

    spec: ModelSpec
    base_url: str
    api: WireApi
    preset: ProviderPreset | None
    override_key_env: str | None


def resolve_address(settings: Settings, env: dict[str, str] | None = None) -> Address:
    env = dict(os.environ) if env is None else env
    spec = parse_spec(settings.model)
    preset = PROVIDERS.get(spec.provider)
    override = settings.providers.get(spec.provider)
    base_url = settings.base_url or (override.base_url if override else None)
    if base_url is None and preset and preset.base_url_env:
        base_url = env.get(preset.base_url_env) or None
    if base_url is None and preset:
        base_url = preset.base_url
    if base_url is None:
        known = ", ".join(PROVIDERS)
        raise ModelSpecError(
            f"unknown provider {spec.provider!r}: use one of {known}, "
            "or give --base-url for any OpenAI-compatible server"
        )
    api = settings.api or (override.api if override else None) or default_api(base_url)
    return Address(spec, base_url, api, preset, override.api_key_env if override else None)


def resolve_endpoint(
    settings: Settings, env: dict[str, str] | None = None, *, key_required: bool = True
) -> Endpoint:
    """``key_required=False``: for a client whose sessions run on a dcode server, which never
    calls this model (the server's answers), so a hosted provider's missing key stops nothing."""
    env = dict(os.environ) if env is None else env
    address = resolve_address(settings, env)
    spec, base_url, preset = address.spec, address.base_url, address.preset
    key_env, key = _find_key(preset, address.override_key_env, env)
    hosted_default = preset is not None and preset.key_required and base_url == preset.base_url
    if not key and hosted_default and key_required:
        raise ModelSpecError(
            f"no API key for {spec.provider}: set {key_env} (export {key_env}=...)"
        )
    return Endpoint(spec, base_url, address.api, key or "not-needed", key_env)


def _find_key(
    preset: ProviderPreset | None, override_env: str | None, env: dict[str, str]
) -> tuple[str | None, str | None]:
    candidates = [override_env] if override_env else []
    if preset and preset.key_env:
        candidates.append(preset.key_env)
    if not preset:
        candidates.extend(GENERIC_KEY_ENVS)
    for name in candidates:
        if env.get(name):
            return name, env[name]
    return (candidates[0] if candidates else None), None
