"""Prompt tokens as OpenAI counts them, for the scripted server's usage figures.

Written from OpenAI's documented rule and the wire body the server received (not from dcode's
counter, which a test compares with it): each chat message costs 3 tokens of frame, its role
and its content in the model's BPE (1 more and the name when it has one); an assistant's tool
call costs its function name and its arguments string; the reply is primed with 3; the tools
cost their definitions' JSON. An image part costs OpenAI's tile price at the size it arrives.
On the Responses wire the ``instructions`` are a system message and each input item a message.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from dcode.context.tokens.encodings import encoding

_OPENAI = re.compile(
    r"^(ft:)?(chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|gpt-4|gpt-3\.5)(\b|-|$)"
)
_CL100K = re.compile(r"^(gpt-4|gpt-3\.5)(\b|-|$)")


def is_openai_model(model: str | None) -> bool:
    return bool(model) and bool(_OPENAI.match(str(model).lower().rsplit("/", 1)[-1]))


def _encoding_for(model: str) -> Any:
    name = model.lower().rsplit("/", 1)[-1]
    old = _CL100K.match(name) and not name.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5"))
    return encoding("cl100k_base" if old else "o200k_base")


def _tile_price(data_url: str) -> int:
    from PIL import Image

    raw = base64.b64decode(data_url.split(",", 1)[1])
    with Image.open(io.BytesIO(raw)) as image:
        w, h = image.size
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def _parts(content: Any, enc: Any) -> int:
    if isinstance(content, str):
        return len(enc.encode_ordinary(content))
    total = 0
    for part in content or []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") in {"text", "input_text", "output_text"}:
            total += len(enc.encode_ordinary(str(part.get("text", ""))))
        elif part.get("type") in {"image_url", "input_image"}:
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            if isinstance(url, str) and url.startswith("data:"):
                total += _tile_price(url)
    return total


def _chat_message(message: Mapping[str, Any], enc: Any) -> int:
    tokens = 3 + len(enc.encode_ordinary(str(message.get("role", ""))))
    tokens += _parts(message.get("content"), enc)
    if message.get("name") and message.get("role") != "tool":
        tokens += 1 + len(enc.encode_ordinary(str(message["name"])))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        tokens += len(enc.encode_ordinary(str(function.get("name", "")))) + len(
            enc.encode_ordinary(str(function.get("arguments", "")))
        )
    return tokens


def _responses_item(item: Mapping[str, Any], enc: Any) -> int:
    match item.get("type"):
        case "function_call":
            return (
                3
                + len(enc.encode_ordinary("assistant"))
                + len(enc.encode_ordinary(str(item.get("name", ""))))
                + len(enc.encode_ordinary(str(item.get("arguments", ""))))
            )
        case "function_call_output":
            return 3 + len(enc.encode_ordinary("tool")) + _parts(item.get("output"), enc)
        case "reasoning":
            return 0
    return _chat_message(item, enc)


def _tool_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A Responses tool (flat) in the Chat shape, so both wires price a tool alike."""
    if "function" in tool:
        return dict(tool)
    return {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}


def openai_input_tokens(body: Mapping[str, Any]) -> int:
    enc = _encoding_for(str(body.get("model")))
    if "messages" in body:
        tokens = sum(_chat_message(m, enc) for m in body["messages"])
    else:
        items = body.get("input") or []
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        tokens = sum(_responses_item(item, enc) for item in items if isinstance(item, Mapping))
        if body.get("instructions"):
            tokens += (
                3
                + len(enc.encode_ordinary("system"))
                + len(enc.encode_ordinary(str(body["instructions"])))
            )
    tools = body.get("tools") or []
    if tools:
        tokens += len(
            enc.encode_ordinary(json.dumps([_tool_schema(t) for t in tools], ensure_ascii=False))
        )
    return tokens + 3
