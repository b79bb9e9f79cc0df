"""What the model's own server says about it: whether it sees images, its window, its prices.

OpenAI-compatible servers have no common way to say what a model takes, so a local model's
profile was a guess (no images, a 32k window) and a vision model got text placeholders instead
of its screenshots. Four kinds of server do say it, each in its own dialect:

- Ollama: ``POST /api/show`` lists ``capabilities`` (``vision``) and the ``num_ctx`` the model
  runs with (the trained maximum in ``model_info`` is not what a request gets, so it is not
  taken for the window);
- LM Studio: ``GET /api/v0/models/{model}``: ``type`` ``vlm``, and the loaded (else the
  maximum) context length;
- vLLM: ``GET /v1/models``: the served window, ``max_model_len``;
- OpenRouter: ``GET /v1/models``: ``architecture.input_modalities``, ``context_length``, the
  largest answer and the prices per token;
- LiteLLM's proxy: ``GET /model/info``: each model's ``model_info`` (``max_input_tokens``,
  ``max_output_tokens``, ``supports_vision``, ``supports_pdf_input``, ``supports_audio_input``
  and the prices per token), else the ``max_input_tokens`` its ``/v1/models`` lists;
- any other OpenAI-compatible server (a provider that is not a preset): ``GET /v1/models``, where
  the model's entry names a window in one of the fields those servers use (``max_model_len``,
  ``max_input_tokens``, ``context_length``, ``context_window``); a window the model was trained
  for (llama.cpp's ``n_ctx_train``) is not what a request gets, so it is not taken.

What a server said is kept in ``$DCODE_HOME/model_info.json`` (0600) for a week, by endpoint
and model; a server that could not tell (down, an old version, no such model) is asked again
after an hour. Only ``resolve_model`` asks, with a short deadline and the endpoint's own key;
everything else (``media inspect``, the profile a command prints) reads what is kept. Your
``[models."SPEC"]`` table still has the last word.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard
from urllib.parse import quote

from dcode.settings.presets import PROVIDERS
from dcode.settings.private_files import one_writer, write_private

CACHE_NAME = "model_info.json"
_LOCK_NAME = "model_info.lock"
KEEP_SECONDS = 7 * 24 * 3600
RETRY_SECONDS = 3600
DEADLINE_SECONDS = 3.0
DIALECTS = ("ollama", "lmstudio", "vllm", "openrouter", "litellm")
GENERIC = "openai-compatible"
"""The dialect of a provider that is not a preset: only ``/v1/models`` is asked."""
WINDOW_FIELDS = ("max_model_len", "max_input_tokens", "context_length", "context_window")

Fetch = Callable[[str, str, dict[str, object] | None, str], object]
"""``(method, url, json body or None, api key)`` to the decoded JSON answer; raises on failure."""


@dataclass(frozen=True, slots=True)
class Found:
    values: dict[str, object]
    """Profile fields (``image_inputs``, ``max_input_tokens``, …) the server stated."""
    source: str
    """Where they came from, for ``dcode doctor``."""


def dialect(provider: str) -> str | None:
    """How this provider's server is asked about its models; None: it is not asked (a hosted
    preset whose models langchain or dcode already knows)."""
    if provider in DIALECTS:
        return provider
    return GENERIC if provider not in PROVIDERS else None


def server_root(base_url: str) -> str:
    """The server's root: ``http://host:11434/v1`` → ``http://host:11434``."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def ask_server(
    provider: str, base_url: str, model: str, api_key: str, fetch: Fetch
) -> Found | None:
    """What the server says of ``model``; None when its dialect has nothing on it."""
    match dialect(provider):
        case "ollama":
            return _ollama(
                fetch("POST", f"{server_root(base_url)}/api/show", {"model": model}, api_key)
            )
        case "lmstudio":
            return _lmstudio(
                fetch(
                    "GET",
                    f"{server_root(base_url)}/api/v0/models/{quote(model, safe='')}",
                    None,
                    api_key,
                )
            )
        case "vllm":
            return _listed(
                fetch("GET", f"{base_url.rstrip('/')}/models", None, api_key), model, _vllm
            )
        case "openrouter":
            return _listed(
                fetch("GET", f"{base_url.rstrip('/')}/models", None, api_key), model, _openrouter
            )
        case "litellm":
            return _litellm(provider, base_url, model, api_key, fetch)
        case "openai-compatible":
            return _listed(
                fetch("GET", f"{base_url.rstrip('/')}/models", None, api_key), model, _generic
            )
    return None


def _litellm(provider: str, base_url: str, model: str, api_key: str, fetch: Fetch) -> Found | None:
    """``/model/info`` (all a model's facts), else the window ``/v1/models`` lists: a key may
    be allowed the one and not the other."""
    try:
        found = _litellm_info(
            fetch("GET", f"{server_root(base_url)}/model/info", None, api_key), model
        )
    except Exception:  # noqa: BLE001 - refused or older: the listing may still say it
        found = None
    return found or _listed(
        fetch("GET", f"{base_url.rstrip('/')}/models", None, api_key), model, _generic
    )


def _litellm_info(answer: object, model: str) -> Found | None:
    entries = answer.get("data") if isinstance(answer, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        info = (
            entry.get("model_info")
            if isinstance(entry, dict) and entry.get("model_name") == model
            else None
        )
        if isinstance(info, dict):
            values = _litellm_values(info)
            return Found(values, "litellm /model/info") if values else None
    return None


def _litellm_values(info: dict[str, object]) -> dict[str, object]:
    values: dict[str, object] = {}
    for field, key in (
        ("max_input_tokens", "max_input_tokens"),
        ("max_output_tokens", "max_output_tokens"),
    ):
        if _positive(count := info.get(key)):
            values[field] = count
    for field, key in (
        ("image_inputs", "supports_vision"),
        ("pdf_inputs", "supports_pdf_input"),
        ("audio_inputs", "supports_audio_input"),
    ):
        if isinstance(info.get(key), bool):
            values[field] = info[key]
    for field, key in (
        ("input_price", "input_cost_per_token"),
        ("output_price", "output_cost_per_token"),
        ("cached_input_price", "cache_read_input_token_cost"),
    ):
        per_token = _number(info.get(key))
        if per_token is not None and per_token >= 0:
            values[field] = round(per_token * 1_000_000, 6)
    return values


def _ollama(answer: object) -> Found | None:
    if not isinstance(answer, dict):
        return None
    values: dict[str, object] = {}
    capabilities = answer.get("capabilities")
    if isinstance(capabilities, list):
        values["image_inputs"] = "vision" in capabilities
    for line in str(answer.get("parameters") or "").splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            values["max_input_tokens"] = int(value.strip())
    return Found(values, "ollama /api/show") if values else None


def _lmstudio(answer: object) -> Found | None:
    if not isinstance(answer, dict):
        return None
    values: dict[str, object] = {}
    if isinstance(answer.get("type"), str):
        values["image_inputs"] = answer["type"] == "vlm"
    window = answer.get("loaded_context_length") or answer.get("max_context_length")
    if _positive(window):
        values["max_input_tokens"] = int(window)
    return Found(values, "lmstudio /api/v0/models") if values else None


def _listed(
    answer: object, model: str, read: Callable[[dict[str, object]], Found | None]
) -> Found | None:
    entries = answer.get("data") if isinstance(answer, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return read(entry)
    return None


def _vllm(entry: dict[str, object]) -> Found | None:
    window = entry.get("max_model_len")
    return (
        Found({"max_input_tokens": int(window)}, "vllm /v1/models") if _positive(window) else None
    )


def _generic(entry: dict[str, object]) -> Found | None:
    for key in WINDOW_FIELDS:
        if _positive(window := entry.get(key)):
            values: dict[str, object] = {"max_input_tokens": window}
            if _positive(most := entry.get("max_output_tokens")):
                values["max_output_tokens"] = most
            return Found(values, f"/v1/models ({key})")
    return None


def _openrouter(entry: dict[str, object]) -> Found | None:
    values: dict[str, object] = {}
    architecture = entry.get("architecture")
    modalities = architecture.get("input_modalities") if isinstance(architecture, dict) else None
    if isinstance(modalities, list):
        values["image_inputs"] = "image" in modalities
        values["pdf_inputs"] = "file" in modalities
        values["audio_inputs"] = "audio" in modalities
    if _positive(window := entry.get("context_length")):
        values["max_input_tokens"] = window
    top = entry.get("top_provider")
    if isinstance(top, dict) and _positive(top.get("max_completion_tokens")):
        values["max_output_tokens"] = int(top["max_completion_tokens"])
    pricing = entry.get("pricing")
    if isinstance(pricing, dict):
        for field, key in (
            ("input_price", "prompt"),
            ("output_price", "completion"),
            ("cached_input_price", "input_cache_read"),
        ):
            per_token = _number(pricing.get(key))
            if per_token is not None and per_token >= 0:
                values[field] = round(per_token * 1_000_000, 6)
    return Found(values, "openrouter /v1/models") if values else None


def _positive(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _number(value: object) -> float | None:
    """A JSON number, or a string of one; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


class ModelInfoCache:
    """What servers said, by endpoint and model, with when they said it."""

    def __init__(self, home: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.home = home
        self.path = home / CACHE_NAME
        self.clock = clock

    def get(self, base_url: str, model: str) -> tuple[Found | None, bool]:
        """(what is kept, whether it is still fresh); a failure is kept as (None, fresh)."""
        entry = self._read().get(_key(base_url, model))
        if not isinstance(entry, dict):
            return None, False
        age = self.clock() - float(entry.get("at", 0))
        values, source = entry.get("values"), entry.get("source")
        if isinstance(values, dict) and isinstance(source, str) and values:
            return Found(values, source), age < KEEP_SECONDS
        return None, age < RETRY_SECONDS

    def put(self, base_url: str, model: str, found: Found | None) -> None:
        with one_writer(self.home / _LOCK_NAME):
            data = self._read()
            data[_key(base_url, model)] = {
                "at": self.clock(),
                "values": found.values if found else {},
                "source": found.source if found else "",
            }
            write_private(self.path, json.dumps(data, indent=1, sort_keys=True) + "\n")

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: asked again, and rewritten whole
        return data if isinstance(data, dict) else {}


def _key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')}#{model}"


def kept(home: Path, provider: str, base_url: str, model: str) -> Found | None:
    """What is kept for this model, fresh or not, without asking anyone (light)."""
    if dialect(provider) is None:
        return None
    return ModelInfoCache(home).get(base_url, model)[0]


def discovered(
    home: Path, provider: str, base_url: str, model: str, api_key: str, fetch: Fetch | None = None
) -> Found | None:
    """What the server says of the model: kept, or asked now (once a week; after a failure,
    once an hour). Never raises: a server that cannot tell leaves the profile as it was."""
    if dialect(provider) is None:
        return None
    cache = ModelInfoCache(home)
    found, fresh = cache.get(base_url, model)
    if fresh:
        return found
    try:
        asked = ask_server(provider, base_url, model, api_key, fetch or http_fetch)
    except Exception:  # noqa: BLE001 - down, refused, garbage: the profile stays a guess
        asked = None
    with contextlib.suppress(OSError):  # asked again next time
        cache.put(base_url, model, asked)
    return asked or found


def http_fetch(method: str, url: str, body: dict[str, object] | None, api_key: str) -> object:
    """One JSON request with a short deadline and dcode's User-Agent."""
    import httpx2 as httpx  # the HTTP client dcode declares (the OpenAI client's)

    from dcode.models.user_agent import USER_AGENT

    headers = {"User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    response = httpx.request(method, url, json=body, headers=headers, timeout=DEADLINE_SECONDS)
    response.raise_for_status()
    return response.json()
