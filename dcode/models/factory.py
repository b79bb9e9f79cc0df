"""Building the chat model. Everything goes through ``langchain_openai.ChatOpenAI``.

Retries are the OpenAI client's own: exponential backoff with jitter that honours
``Retry-After`` on 429 and 5xx answers. dcode gives that client its limits: the HTTP client
that holds the connect and first-byte deadlines and the retry budget around its tries
and the stall timeout while the answer streams (``dcode/models/transport.py``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict

from dcode.models.discovery import Found, discovered, kept
from dcode.models.image_transport import ImageTransport, image_transport
from dcode.models.known_profiles import known_openai_profile
from dcode.models.profiles import ModelProfile, resolve_profile
from dcode.models.spec import Endpoint, ModelSpec, resolve_endpoint
from dcode.settings.config import ConfigError, Settings, WireApi
from dcode.settings.presets import accepts_prompt_cache_key

if TYPE_CHECKING:
    import httpx2
    from langchain_openai import ChatOpenAI

    from dcode.models.transport import ModelHttpClient

# langchain-openai logs warnings that the turn's error line already says (``dcode/models/errors.py``);
# without a handler of its own they would reach the terminal through logging's last resort.
# --debug's handler on the root still sees them.
logging.getLogger("langchain_openai").addHandler(logging.NullHandler())


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    endpoint: Endpoint
    profile: ModelProfile

    @property
    def spec(self) -> str:
        return self.endpoint.spec.text

    @property
    def prompt_cache_key(self) -> bool:
        """Whether this model's requests carry the session id as ``prompt_cache_key``."""
        endpoint = self.endpoint
        return accepts_prompt_cache_key(
            endpoint.spec.provider, endpoint.base_url, self.profile.prompt_cache_key
        )

    @property
    def image_transport(self) -> ImageTransport:
        """How this model's requests carry images: "inline" or "files"."""
        endpoint = self.endpoint
        return image_transport(
            endpoint.spec.provider, endpoint.base_url, endpoint.api, self.profile.image_transport
        )


def known_profile(provider: str, model: str) -> dict[str, object] | None:
    """langchain's known profile for the providers whose model names are OpenAI's."""
    if provider not in {"openai", "openrouter"}:
        return None
    return known_openai_profile(model)


def model_profile(spec: ModelSpec, settings: Settings) -> ModelProfile:
    """The profile a session on ``spec`` runs with; light, so commands that only need the
    profile (``dcode media inspect``) get the engine's own answer without its imports (and
    what its server said, as kept: nobody is asked)."""
    return _profile(spec, settings, _kept(spec, settings))


def _profile(spec: ModelSpec, settings: Settings, served: Found | None) -> ModelProfile:
    known = known_profile(spec.provider, spec.model)
    return resolve_profile(
        spec.provider,
        spec.model,
        known=known,
        overrides=settings.model_overrides,
        served=served.values if served else None,
    )


def _kept(spec: ModelSpec, settings: Settings) -> Found | None:
    from dcode.models.spec import resolve_address

    try:
        return kept(settings.home, spec.provider, resolve_address(settings).base_url, spec.model)
    except ConfigError:
        return None


def resolve_model(
    settings: Settings, env: dict[str, str] | None = None, *, key_required: bool = True
) -> ResolvedModel:
    """The model's endpoint and profile; a local server (Ollama, LM Studio, vLLM) or OpenRouter
    is asked what the model takes, once a week (``discovery``). ``key_required``: as
    ``resolve_endpoint``'s."""
    endpoint = resolve_endpoint(settings, env, key_required=key_required)
    spec = endpoint.spec
    served = discovered(
        settings.home, spec.provider, endpoint.base_url, spec.model, endpoint.api_key
    )
    profile = _profile(spec, settings, served)
    if settings.effort is not None:  # asked for this run (--effort, /effort): over the profile's
        profile = replace(profile, reasoning_effort=settings.effort.value)
    return ResolvedModel(endpoint, profile)


class _Thinking(TypedDict, total=False):
    """How a reasoning model is asked to think: the keyword its wire takes."""

    reasoning: dict[str, str]  # the Responses API's
    reasoning_effort: str  # Chat Completions'


def model_http_client(settings: Settings) -> ModelHttpClient:
    """An HTTP client with the settings' limits, for ``build_chat_model``; the caller closes it."""
    from dcode.models.transport import Limits, ModelHttpClient

    return ModelHttpClient(Limits.of(settings))


class _SyncClient(TypedDict, total=False):
    http_client: httpx2.Client


def _sync_client(http: ModelHttpClient) -> _SyncClient:
    """ChatOpenAI's synchronous client, sharing ``http``'s TLS context (``sync_twin``); none
    under ``OPENAI_PROXY``, where ChatOpenAI builds its own proxied one (and refuses one given)."""
    return {} if os.environ.get("OPENAI_PROXY") else {"http_client": http.sync_twin()}


def build_chat_model(
    resolved: ResolvedModel, settings: Settings, http_async_client: ModelHttpClient | None = None
) -> ChatOpenAI:
    """The chat model for ``resolved``. Pass ``http_async_client`` (from ``model_http_client``)
    to own its connections: without one the model gets a client of its own, left to the garbage
    collector, whose pooled connections belong to the event loop that first used them."""
    from pydantic import SecretStr

    from dcode.models.chat_model import DcodeChatOpenAI
    from dcode.models.transport import BudgetedAsyncOpenAI, Limits
    from dcode.models.user_agent import USER_AGENT

    endpoint = resolved.endpoint
    http = http_async_client or model_http_client(settings)
    client = BudgetedAsyncOpenAI(
        api_key=endpoint.api_key,
        base_url=endpoint.base_url,
        max_retries=settings.max_retries,
        timeout=Limits.of(settings).httpx_timeout,
        http_client=http,
        retry_budget=settings.retry_budget,
        default_headers={"User-Agent": USER_AGENT},
    )
    effort = resolved.profile.reasoning_effort
    thinking: _Thinking = {}
    if effort is not None:
        # The Responses API also streams a summary of the reasoning when asked for one.
        thinking = (
            {"reasoning": {"effort": effort, "summary": "auto"}}
            if endpoint.api is WireApi.RESPONSES
            else {"reasoning_effort": effort}
        )
    return DcodeChatOpenAI(
        **thinking,
        model=endpoint.spec.model,
        base_url=endpoint.base_url,
        api_key=SecretStr(endpoint.api_key),
        use_responses_api=endpoint.api is WireApi.RESPONSES,
        streaming=True,
        stream_usage=True,
        max_retries=settings.max_retries,
        stream_chunk_timeout=None,  # the stall timeout is the transport's (dcode/models/transport.py)
        root_async_client=client,
        async_client=client.chat.completions,
        **_sync_client(http),
        window=resolved.profile.max_input_tokens,
        window_guessed="max_input_tokens" in resolved.profile.guessed,
        spec=resolved.spec,
    )
