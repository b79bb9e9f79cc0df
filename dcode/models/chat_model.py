"""``ChatOpenAI`` plus what dcode needs from the stream it reads.

- Reasoning: DeepSeek, vLLM and others stream chain-of-thought as ``reasoning_content`` (or
  ``reasoning``) on Chat Completions deltas. ``ChatOpenAI`` discards it; this subclass keeps it in
  ``additional_kwargs["reasoning_content"]`` so the UI can show it dimmed. It is never sent back:
  langchain's request conversion ignores unknown ``additional_kwargs``.
- Merging: the first chunk of every stream is a ``BalancedMergeChunk``, so that the final
  message is merged without copying long arguments once per delta (``chunk_merge.py``).
- Invalid data: a streamed event that is not JSON fails inside the OpenAI SDK with a bare
  ``JSONDecodeError``; here it becomes ``InvalidModelData``, which says where it came from.
- An empty answer: a server whose context is smaller than the request may answer with a stream
  that has no event at all (llama-cpp-python does). langchain-core then says only "No
  generations found in stream."; here it becomes ``EmptyAnswer``, which carries the request's
  estimated size and the window dcode was told, so the error line can say what to change.
- No usage: a stream without usage figures (servers that ignore ``stream_options``) gets a
  last chunk with estimated ones, marked as such (``dcode/models/usage.py``), so the status bar
  shows estimates instead of nothing.
- The request: the conversation is handed to the OpenAI client as ``extra_body``, which the
  client sends as it is, instead of walking it again on every call (``history_payload.py``);
  on Chat Completions each message is converted to its wire dict once (``message_dicts.py``).
"""

# Any: overrides of ChatOpenAI's methods, whose *args and **kwargs LangChain leaves untyped

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessageChunk, BaseMessage, UsageMetadata
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI

from dcode.models.chunk_merge import BalancedMergeChunk
from dcode.models.history_payload import history_as_extra_body
from dcode.models.message_dicts import converted
from dcode.models.usage import USAGE_ESTIMATED

REASONING_KEYS = ("reasoning_content", "reasoning")


class InvalidModelData(ValueError):
    """The model server streamed an event that is not valid JSON."""


class EmptyAnswer(ValueError):
    """The server ended its answer without sending anything."""

    def __init__(
        self, request_tokens: int, window: int | None, window_guessed: bool, spec: str
    ) -> None:
        super().__init__("the model server returned an empty answer")
        self.request_tokens = request_tokens
        self.window = window
        self.window_guessed = window_guessed
        self.spec = spec


class DcodeChatOpenAI(ChatOpenAI):
    window: int | None = None
    """The window dcode believes the model has (its profile's ``max_input_tokens``)."""
    window_guessed: bool = False
    """Whether that window is the fallback's guess rather than something the model or its
    server stated."""
    spec: str = ""
    """The ``provider:model`` the user chose, for the line that says what to configure."""

    def _get_request_payload(
        self, input_: LanguageModelInput, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict:
        def convert(messages: LanguageModelInput) -> dict[str, object]:
            return super(DcodeChatOpenAI, self)._get_request_payload(messages, stop=stop, **kwargs)

        # Chat Completions only (dcode always names the wire): the Responses API's input is
        # built from the whole list.
        return history_as_extra_body(
            converted(input_, convert) if self.use_responses_api is False else convert(input_)
        )

    def _convert_chunk_to_generation_chunk(
        self,
        chunk: dict,
        default_chunk_class: type,
        base_generation_info: dict | None,
    ) -> ChatGenerationChunk | None:
        generation = super()._convert_chunk_to_generation_chunk(
            chunk, default_chunk_class, base_generation_info
        )
        thought = _delta_reasoning(chunk)
        if generation is not None and thought:
            generation.message.additional_kwargs["reasoning_content"] = thought
        return generation

    async def _astream(
        self, messages: Sequence[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        stream = super()._astream(messages, *args, **kwargs)
        first, usage, output_chars = True, False, 0
        try:
            async for chunk in stream:
                if first:
                    chunk, first = BalancedMergeChunk.adopt(chunk), False
                usage = usage or (
                    isinstance(chunk.message, AIMessageChunk) and bool(chunk.message.usage_metadata)
                )
                output_chars += _output_chars(chunk.message)
                yield chunk
        except json.JSONDecodeError as exc:
            raise InvalidModelData("a streamed event that is not JSON") from exc
        finally:
            if isinstance(stream, AsyncGenerator):  # typed as an iterator; a generator to close
                await stream.aclose()
        if first:
            raise EmptyAnswer(
                _request_tokens(messages, kwargs.get("tools")),
                self.window,
                self.window_guessed,
                self.spec or self.model_name,
            )
        if not usage:
            yield _estimated_usage(
                _request_tokens(messages, kwargs.get("tools")), math.ceil(output_chars / 4)
            )


def _request_tokens(messages: Sequence[BaseMessage], tools: object) -> int:
    """About how many tokens the request is: its messages, and its tools' schemas."""
    schemas = math.ceil(len(json.dumps(tools, default=str)) / 4) if tools else 0
    return count_tokens_approximately(list(messages)) + schemas


def _output_chars(message: BaseMessage) -> int:
    text = (
        message.content
        if isinstance(message.content, str)
        else json.dumps(message.content, default=str)
    )
    arguments = sum(
        len(str(call.get("args") or ""))
        for call in (message.tool_call_chunks if isinstance(message, AIMessageChunk) else [])
    )
    return (
        len(text) + arguments + len(str(message.additional_kwargs.get("reasoning_content") or ""))
    )


def _estimated_usage(input_tokens: int, output_tokens: int) -> ChatGenerationChunk:
    """A last chunk that adds estimated usage figures to an answer that came without any."""
    usage = UsageMetadata(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )
    return ChatGenerationChunk(
        message=AIMessageChunk(
            content="", usage_metadata=usage, response_metadata={USAGE_ESTIMATED: True}
        )
    )


def _delta_reasoning(chunk: Mapping[str, object]) -> str:
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    delta = choices[0].get("delta") or {}
    for key in REASONING_KEYS:
        value = delta.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
