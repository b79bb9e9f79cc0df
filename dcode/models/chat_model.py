"""``ChatOpenAI`` plus the one thing OpenAI-compatible servers add that it drops.

DeepSeek, vLLM and others stream chain-of-thought as ``reasoning_content`` (or ``reasoning``)
on Chat Completions deltas. ``ChatOpenAI`` discards it; this subclass keeps it in
``additional_kwargs["reasoning_content"]`` so the UI can show it dimmed. It is never sent back:
langchain's request conversion ignores unknown ``additional_kwargs``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI

REASONING_KEYS = ("reasoning_content", "reasoning")


class DcodeChatOpenAI(ChatOpenAI):
    def _convert_chunk_to_generation_chunk(
        self,
        chunk: dict,
        default_chunk_class: type,
        base_generation_info: dict | None,
    ) -> ChatGenerationChunk | None:
        generation = super()._convert_chunk_to_generation_chunk(chunk, default_chunk_class, base_generation_info)
        thought = _delta_reasoning(chunk)
        if generation is not None and thought:
            generation.message.additional_kwargs["reasoning_content"] = thought
        return generation


def _delta_reasoning(chunk: dict[str, Any]) -> str:
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    delta = choices[0].get("delta") or {}
    for key in REASONING_KEYS:
        value = delta.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
