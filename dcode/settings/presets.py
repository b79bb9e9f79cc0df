"""Provider presets: where each provider lives and which environment variable holds its key.

Adding an OpenAI-compatible provider is one entry here; anything else is reachable with
``--base-url``. Each preset names a few of its well-known models for the ``/model`` picker
(none for servers that serve whatever was loaded into them). This module is light (no
langchain) so ``dcode doctor`` and the CLI can read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dcode.settings.values import ProviderOverride, WireApi

OFFICIAL_OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class ProviderPreset:
    name: str
    base_url: str
    key_env: str | None
    key_required: bool
    base_url_env: str | None = None
    local: bool = False
    models: tuple[str, ...] = ()


PROVIDERS: dict[str, ProviderPreset] = {
    preset.name: preset
    for preset in (
        ProviderPreset(
            "openai",
            OFFICIAL_OPENAI_URL,
            "OPENAI_API_KEY",
            True,
            "OPENAI_BASE_URL",
            models=("gpt-5.1", "gpt-5.1-codex", "gpt-5-mini", "gpt-4.1"),
        ),
        ProviderPreset(
            "deepseek",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
            True,
            models=("deepseek-chat", "deepseek-reasoner"),
        ),
        ProviderPreset(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            True,
            models=("openai/gpt-5.1", "anthropic/claude-sonnet-4.5", "qwen/qwen3-coder"),
        ),
        ProviderPreset(
            "ollama",
            "http://localhost:11434/v1",
            "OLLAMA_API_KEY",
            False,
            local=True,
            models=("qwen3-coder", "gpt-oss:20b", "devstral"),
        ),
        ProviderPreset("vllm", "http://localhost:8000/v1", "VLLM_API_KEY", False, local=True),
        ProviderPreset(
            "lmstudio", "http://localhost:1234/v1", "LMSTUDIO_API_KEY", False, local=True
        ),
        ProviderPreset("litellm", "http://localhost:4000/v1", "LITELLM_API_KEY", False),
    )
}

GENERIC_KEY_ENVS = ("DCODE_API_KEY", "OPENAI_API_KEY")


def provider_variables(overrides: Mapping[str, ProviderOverride]) -> frozenset[str]:
    """Every environment variable that may configure a provider's key or address: the presets',
    the generic ones and each configured ``api_key_env``. The shell is kept from seeing them."""
    names = set(GENERIC_KEY_ENVS)
    for preset in PROVIDERS.values():
        names.update(name for name in (preset.key_env, preset.base_url_env) if name)
    names.update(override.api_key_env for override in overrides.values() if override.api_key_env)
    return frozenset(names)


def is_official_openai(provider: str, base_url: str) -> bool:
    return provider == "openai" and base_url.rstrip("/") == OFFICIAL_OPENAI_URL


def accepts_prompt_cache_key(provider: str, base_url: str, configured: bool | None = None) -> bool:
    """Whether requests may carry ``prompt_cache_key``: ``configured`` (the model's
    ``prompt_cache_key`` setting) when set, else only on OpenAI's own endpoint. Other servers
    may reject a parameter they do not know, so it is never sent to them by default."""
    return is_official_openai(provider, base_url) if configured is None else configured


def default_api(base_url: str) -> WireApi:
    """The Responses API is the default only where it is certain to exist: OpenAI itself."""
    return WireApi.RESPONSES if base_url.rstrip("/") == OFFICIAL_OPENAI_URL else WireApi.CHAT
