"""Model profiles: what a model can take and how big its window is.

Capabilities come from profiles and never from guesses at request time.
The sources, lowest priority first: a conservative fallback, langchain's known profiles, dcode's
presets, and the user's ``[models."provider:model"]`` tables. ``guessed`` names every figure
that came from the fallback, so ``dcode doctor`` can say which numbers to check.
"""

# Any: langchain's model profile dict and the user's TOML tables: values by field name, checked here and splatted into ModelProfile

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ModelProfile:
    max_input_tokens: int = 32_768
    max_output_tokens: int = 4_096
    image_inputs: bool = False
    audio_inputs: bool = False
    video_inputs: bool = False
    pdf_inputs: bool = False
    image_tool_message: bool = False
    pdf_tool_message: bool = False
    image_max_pixels: int = 640_000
    image_max_bytes: int = 1 * MIB
    image_token_formula: str = "generic"
    image_transport: str | None = None
    """How requests carry images: "inline" or "files"; None: by the route
    (``dcode/models/image_transport.py``)."""
    request_image_bytes: int = 128 * MIB
    """What the images of one request may add to its body (base64 for inline images), before
    the oldest are left out of it."""
    request_max_images: int = 600
    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None
    """USD per million input tokens the provider read from its prompt cache; None: priced as
    other input (the cost is then an upper bound)."""
    reasoning_effort: str | None = None
    """The reasoning effort asked of this model (a ``ReasoningEffort``); None: nothing is
    sent, and the provider's default applies. ``effort`` in the settings overrides it."""
    prompt_cache_key: bool | None = None
    """Whether requests carry ``prompt_cache_key`` (the session id); None: where the endpoint is
    known to accept it (OpenAI's own), see ``presets.accepts_prompt_cache_key``."""
    guessed: frozenset[str] = frozenset()
    source: str = "fallback"

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float | None:
        """USD for the given tokens, when prices (per million tokens) are known. ``cached_tokens``
        are the part of ``input_tokens`` read from the provider's prompt cache, priced at
        ``cached_input_price`` when known and as other input otherwise."""
        if self.input_price is None or self.output_price is None:
            return None
        cached = min(max(cached_tokens, 0), input_tokens)
        cached_price = (
            self.input_price if self.cached_input_price is None else self.cached_input_price
        )
        spent = (
            (input_tokens - cached) * self.input_price
            + cached * cached_price
            + output_tokens * self.output_price
        )
        return spent / 1_000_000


PROFILE_FIELDS = tuple(f.name for f in fields(ModelProfile) if f.name not in {"guessed", "source"})

# OpenAI scales images to fit 2048x2048 with the short side at most 768: 768x2048 px at most.
# OpenAI takes at most 500 images and 50 MB of image data in one request.
_OPENAI_IMAGE = {
    "image_max_pixels": 768 * 2048,
    "image_max_bytes": 20 * MIB,
    "request_image_bytes": 50_000_000,
    "request_max_images": 500,
}

# Keyed by "provider:model-glob"; the first match wins. Figures are each vendor's documented ones;
# a text-only model says image_inputs = False, so that "no images" is known, not guessed.
PRESETS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "deepseek:deepseek-v4-flash-vision-exp",
        {
            "max_input_tokens": 131_072,
            "max_output_tokens": 8_192,
            "image_inputs": True,
            "image_tool_message": False,
            "image_max_pixels": 640_000,
            "image_max_bytes": 1 * MIB,
            "request_image_bytes": 48 * MIB,  # base64 counts toward DeepSeek's 48 MiB body
        },
    ),
    (
        "deepseek:deepseek-chat",
        {
            "max_input_tokens": 131_072,
            "max_output_tokens": 8_192,
            "image_inputs": False,
            "input_price": 0.28,
            "output_price": 0.42,
        },
    ),
    (
        "deepseek:deepseek-reasoner",
        {
            "max_input_tokens": 131_072,
            "max_output_tokens": 65_536,
            "image_inputs": False,
            "input_price": 0.28,
            "output_price": 0.42,
        },
    ),
    ("deepseek:*", {"max_input_tokens": 131_072, "max_output_tokens": 8_192}),
    (
        "*:qwen3-coder*",
        {"max_input_tokens": 262_144, "max_output_tokens": 65_536, "image_inputs": False},
    ),
    (
        "*:qwen2.5-coder*",
        {"max_input_tokens": 32_768, "max_output_tokens": 8_192, "image_inputs": False},
    ),
    (
        "*:*qwen2.5vl*",
        {
            "max_input_tokens": 128_000,
            "image_inputs": True,
            "image_max_pixels": 1_003_520,
            "image_max_bytes": 10 * MIB,
        },
    ),
    (
        "*:*qwen2.5-vl*",
        {
            "max_input_tokens": 128_000,
            "image_inputs": True,
            "image_max_pixels": 1_003_520,
            "image_max_bytes": 10 * MIB,
        },
    ),
    (
        "*:*qwen3-vl*",
        {
            "max_input_tokens": 262_144,
            "image_inputs": True,
            "image_max_pixels": 1_003_520,
            "image_max_bytes": 10 * MIB,
        },
    ),
    (
        "*:gemma3*",
        {
            "max_input_tokens": 131_072,
            "max_output_tokens": 8_192,
            "image_inputs": True,
            "image_max_pixels": 896 * 896,
            "image_max_bytes": 10 * MIB,
        },
    ),
    (
        "*:llama3.2-vision*",
        {
            "max_input_tokens": 131_072,
            "image_inputs": True,
            "image_max_pixels": 1120 * 1120,
            "image_max_bytes": 10 * MIB,
        },
    ),
    (
        "*:gpt-oss*",
        {"max_input_tokens": 131_072, "max_output_tokens": 32_768, "image_inputs": False},
    ),
    ("*:llama3.1*", {"max_input_tokens": 131_072, "image_inputs": False}),
    ("*:devstral*", {"max_input_tokens": 131_072}),
)

# Prices per million tokens (input, cached input, output) for the common OpenAI models.
_OPENAI_PRICES: dict[str, tuple[float, float, float]] = {
    "gpt-5": (1.25, 0.125, 10.0),
    "gpt-5.1": (1.25, 0.125, 10.0),
    "gpt-5-mini": (0.25, 0.025, 2.0),
    "gpt-5-nano": (0.05, 0.005, 0.40),
    "gpt-4.1": (2.0, 0.50, 8.0),
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "gpt-4o": (2.50, 1.25, 10.0),
    "gpt-4o-mini": (0.15, 0.075, 0.60),
}

_PATCH_MULTIPLIERS = {
    "gpt-4.1-mini": 1.62,
    "gpt-4.1-nano": 2.46,
    "gpt-5-mini": 1.2,
    "gpt-5-nano": 1.5,
    "o4-mini": 1.72,
}


def resolve_profile(
    provider: str,
    model: str,
    *,
    known: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    served: Mapping[str, Any] | None = None,
) -> ModelProfile:
    """Merge the sources for one model; ``known`` is langchain's profile dict when it has one;
    ``served``: what the model's own server said of it (``discovery``), over the presets and
    under the user's config."""
    values: dict[str, Any] = {}
    source = "fallback"
    if known and int(known.get("max_input_tokens") or 0) > 0:
        values.update(_from_langchain(model, known))
        source = "langchain"
    spec = f"{provider}:{model}"
    for pattern, preset in PRESETS:
        if fnmatch.fnmatch(spec.lower(), pattern.lower()):
            values.update(preset)
            source = "dcode preset"
            break
    if served:
        values.update({name: value for name, value in served.items() if name in PROFILE_FIELDS})
        source = f"{source} + its server" if source != "fallback" else "its server"
    for key, table in (overrides or {}).items():
        if key == spec or fnmatch.fnmatch(spec, key):
            values.update(_validated_override(key, table))
            source = "user config" if source == "fallback" else f"{source} + user config"
    guessed = frozenset(
        name
        for name in ("max_input_tokens", "max_output_tokens", "image_inputs")
        if name not in values
    )
    return replace(ModelProfile(), **values, guessed=guessed, source=source)


def _from_langchain(model: str, known: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {"max_input_tokens": int(known["max_input_tokens"])}
    if int(known.get("max_output_tokens") or 0) > 0:
        values["max_output_tokens"] = int(known["max_output_tokens"])
    for flag in (
        "image_inputs",
        "audio_inputs",
        "video_inputs",
        "pdf_inputs",
        "image_tool_message",
        "pdf_tool_message",
    ):
        if isinstance(known.get(flag), bool):
            values[flag] = known[flag]
    if values.get("image_inputs"):
        values.update(_OPENAI_IMAGE)
        base = model.split("/")[-1]
        multiplier = next(
            (m for prefix, m in _PATCH_MULTIPLIERS.items() if base.startswith(prefix)), None
        )
        values["image_token_formula"] = (
            f"openai-patch:{multiplier}" if multiplier else "openai-tile"
        )
    prices = _OPENAI_PRICES.get(model.split("/")[-1])
    if prices:
        values["input_price"], values["cached_input_price"], values["output_price"] = prices
    return values


def _validated_override(key: str, table: Mapping[str, Any]) -> dict[str, Any]:
    from dcode.settings.config import ConfigError

    out: dict[str, Any] = {}
    defaults = ModelProfile()
    for name, value in table.items():
        if name not in PROFILE_FIELDS:
            raise ConfigError(
                f'[models."{key}"]: unknown profile field {name!r}; known: {", ".join(PROFILE_FIELDS)}'
            )
        expected = type(getattr(defaults, name))
        if name in {"input_price", "output_price", "cached_input_price"}:
            expected = float
        elif name == "prompt_cache_key":
            expected = bool
        elif name == "reasoning_effort":
            from dcode.settings.config import ReasoningEffort

            levels = [level.value for level in ReasoningEffort]
            if value not in levels:
                raise ConfigError(
                    f'[models."{key}"]: reasoning_effort must be one of {", ".join(levels)}, not {value!r}'
                )
            expected = str
        elif name == "image_transport":
            if value not in {"inline", "files"}:
                raise ConfigError(
                    f'[models."{key}"]: image_transport must be "inline" or "files", not {value!r}'
                )
            expected = str
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(
                f'[models."{key}"]: {name} must be {expected.__name__}, not {value!r}'
            )
        out[name] = value
    return out
