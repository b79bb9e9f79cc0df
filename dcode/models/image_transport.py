"""How a route's requests carry images: ``inline`` (base64 in every request) or ``files``
(uploaded once through the Files API, referred to by id).

``files`` needs a wire with a file-id image part. The Responses API has one, ``input_image``
with ``file_id``; on Chat Completions the DeepSeek route takes the OpenAI-compatible file part,
``{"type": "file", "file": {"file_id": …}}``, for images too. So ``files`` is the default on
OpenAI's own Responses endpoint and on DeepSeek's own endpoint, and ``inline`` everywhere else;
``image_transport`` in a model's ``[models."SPEC"]`` table says otherwise for a server the
user knows takes file ids.
"""

from __future__ import annotations

from typing import Literal

from dcode.settings.config import WireApi
from dcode.settings.presets import PROVIDERS, is_official_openai

ImageTransport = Literal["inline", "files"]
TRANSPORTS: tuple[ImageTransport, ...] = ("inline", "files")

FILE_PART_BYTES = 96
"""About what one file-id image part adds to a request body (its JSON, with the id)."""


def is_official_deepseek(provider: str, base_url: str) -> bool:
    return provider == "deepseek" and base_url.rstrip("/") == PROVIDERS["deepseek"].base_url.rstrip(
        "/"
    )


def default_transport(provider: str, base_url: str, api: WireApi) -> ImageTransport:
    if api is WireApi.RESPONSES and is_official_openai(provider, base_url):
        return "files"
    if is_official_deepseek(provider, base_url):
        return "files"
    return "inline"


def image_transport(
    provider: str, base_url: str, api: WireApi, configured: str | None = None
) -> ImageTransport:
    """``configured`` (the model's ``image_transport`` setting) when set, else the default."""
    match configured:
        case "inline" | "files":
            return configured
    return default_transport(provider, base_url, api)


def why_transport(provider: str, base_url: str, api: WireApi, configured: str | None = None) -> str:
    """A few words on where the route's transport comes from, for ``doctor`` and ``inspect``."""
    if configured in TRANSPORTS:
        return "set in config"
    if default_transport(provider, base_url, api) == "files":
        return "the default on this provider's own endpoint"
    return "the default: this endpoint is not known to take file ids"


def transport_line(transport: ImageTransport, why: str, spec: str) -> str:
    """One line on how the route carries images, and how to change it."""
    if transport == "files":
        return f'files: each image uploaded once through the Files API, requests carry its id ({why}; image_transport = "inline" under [models."{spec}"] to send base64 instead)'
    return f'inline: each request carries its images as base64 ({why}; image_transport = "files" under [models."{spec}"] if it takes file ids)'


def file_image_part(wire: str, file_id: str) -> dict[str, object]:
    """The content part that shows the model the uploaded image ``file_id``."""
    if wire == "responses":
        return {"type": "input_image", "file_id": file_id, "detail": "auto"}
    return {"type": "file", "file": {"file_id": file_id}}
