"""``ChatOpenAI`` plus what dcode needs from the stream it reads.

- Reasoning: DeepSeek, vLLM and others stream chain-of-thought as ``reasoning_content`` (or
  ``reasoning``) on Chat Completions deltas. ``ChatOpenAI`` discards it; this subclass keeps it in
  ``additional_kwargs["reasoning_content"]`` so the UI can show it dimmed. It is never sent back:
  langchain's request conversion ignores unknown ``additional_kwargs``.
- Merging: the first chunk of every stream is a ``BalancedMergeChunk``, so that the final
  message is merged without copying long arguments once per delta (``chunk_merge.py``).
- Invalid data: a streamed event that is not JSON fails inside the OpenAI SDK with a bare
  ``JSONDecodeError``; here it becomes ``InvalidModelData``, which says where it came from.
- The request: the conversation is handed to the OpenAI client as ``extra_body``, which the
  client sends as it is, instead of walking it again on every call (``history_payload.py``);
  on Chat Completions each message is converted to its wire dict once (``message_dicts.py``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI

from dcode.models.chunk_merge import BalancedMergeChunk
from dcode.models.history_payload import history_as_extra_body
from dcode.models.message_dicts import converted

REASONING_KEYS = ("reasoning_content", "reasoning")


class InvalidModelData(ValueError):
    """The model server streamed an event that is not valid JSON."""


class DcodeChatOpenAI(ChatOpenAI):
    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
        def convert(messages: Any) -> dict:
            return super(DcodeChatOpenAI, self)._get_request_payload(messages, stop=stop, **kwargs)

        # Chat Completions only (dcode always names the wire): the Responses API's input is
        # built from the whole list.
        return history_as_extra_body(converted(input_, convert) if self.use_responses_api is False else convert(input_))

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

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        stream = super()._astream(*args, **kwargs)
        first = True
        try:
            async for chunk in stream:
                if first:
                    chunk, first = BalancedMergeChunk.adopt(chunk), False
                yield chunk
        except json.JSONDecodeError as exc:
            raise InvalidModelData("a streamed event that is not JSON") from exc
        finally:
            await stream.aclose()


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
