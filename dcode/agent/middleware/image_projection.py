"""Image request projection: reference blocks in history, route-sized bytes in the request.

Hook: ``awrap_model_call``. It finds every dcode reference block in the request's messages and
replaces it, for this request only, with a stable handle line plus the image's request variant
as a standard base64 image block (langchain renders it as an ``image_url`` data URL on Chat
Completions and as ``input_image`` on the Responses API). The oldest images are dropped in whole
steps when the request would grow too large, and a model whose profile takes no images gets a
one-line placeholder per image instead of a 400. The checkpointed messages are never touched.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage

from dcode.agent.events import Notice
from dcode.agent.run_context import RunContext, current_thread_id
from dcode.media.attachment import Attachment, InvalidReferenceBlock, from_reference_block, is_reference_block
from dcode.media.errors import MediaError
from dcode.media.handles import handle_for
from dcode.media.limits import ImageRoute
from dcode.media.offload import DEFAULT_OFFLOAD, OffloadLimits, placeholder_text, plan_offload, refine_offload, upper_bound
from dcode.media.store import AttachmentStore
from dcode.media.variants import Variant, VariantService


@dataclass(frozen=True, slots=True)
class _Ref:
    message: int
    block: int
    raw: dict[str, Any]


def find_references(messages: list[BaseMessage]) -> list[_Ref]:
    refs: list[_Ref] = []
    for m_index, message in enumerate(messages):
        if isinstance(message.content, list):
            refs.extend(
                _Ref(m_index, b_index, block)
                for b_index, block in enumerate(message.content)
                if is_reference_block(block)
            )
    return refs


def no_image_placeholder(name: str) -> str:
    return f"[image {name} not sent: this model does not take image input]"


def unavailable_placeholder(name: str, detail: str) -> str:
    return f"[image {name} could not be attached: {detail}]"


class ImageProjectionMiddleware(AgentMiddleware[AgentState[Any], RunContext]):
    def __init__(
        self,
        store: AttachmentStore,
        variants: VariantService,
        route: ImageRoute,
        *,
        image_inputs: bool,
        limits: OffloadLimits = DEFAULT_OFFLOAD,
    ) -> None:
        super().__init__()
        self.store = store
        self.variants = variants
        self.route = route
        self.image_inputs = image_inputs
        self.limits = limits
        self._warned_threads: set[str] = set()

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        refs = find_references(request.messages)
        if not refs:
            return await handler(request)
        if not self.image_inputs:
            self._notice_once(request, "this model takes no images: they are sent as text placeholders")
            blocks = {(r.message, r.block): [_text(no_image_placeholder(_name(r.raw)))] for r in refs}
        else:
            blocks = await self._project(refs)
        return await handler(request.override(messages=_rebuild(request.messages, blocks)))

    async def _project(self, refs: list[_Ref]) -> dict[tuple[int, int], list[dict[str, Any]]]:
        attachments: list[Attachment | None] = []
        for ref in refs:
            try:
                attachments.append(from_reference_block(ref.raw))
            except InvalidReferenceBlock:
                attachments.append(None)
        bounds = [upper_bound(a.byte_size, self.route.max_bytes) if a else 0 for a in attachments]
        first = plan_offload(bounds, self.limits)
        kept = [(i, a) for i, a in enumerate(attachments) if i >= first.drop and a is not None]
        results = await asyncio.gather(*(self.variants.get(a, self.route) for _, a in kept), return_exceptions=True)
        variants: dict[int, Variant | BaseException] = {i: r for (i, _), r in zip(kept, results, strict=True)}
        exact = [v.byte_size if isinstance(v := variants.get(i), Variant) else None for i in range(len(refs))]
        plan = refine_offload(first, bounds, exact, self.limits)
        encoded = await asyncio.to_thread(_encode_all, {i: v for i, v in variants.items() if i >= plan.drop and isinstance(v, Variant)})
        out: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for index, ref in enumerate(refs):
            att, name = attachments[index], _name(ref.raw)
            key = (ref.message, ref.block)
            if att is None:
                out[key] = [_text(unavailable_placeholder(name, "its reference is damaged"))]
            elif index < plan.drop:
                out[key] = [_text(placeholder_text(att.display_name, str(self.store.path_for(att)), width=att.width, height=att.height))]
            elif isinstance(result := variants.get(index), BaseException) or index not in encoded:
                detail = result.detail if isinstance(result, MediaError) and hasattr(result, "detail") else "unavailable"
                out[key] = [_text(unavailable_placeholder(att.display_name, str(detail)))]
            else:
                variant = result
                assert isinstance(variant, Variant)
                handle = handle_for(att, request_size=(variant.width, variant.height), media_type=variant.media_type, path=self.store.path_for(att))
                out[key] = [_text(handle), {"type": "image", "base64": encoded[index], "mime_type": variant.media_type}]
        return out

    def _notice_once(self, request: ModelRequest[RunContext], message: str) -> None:
        thread = current_thread_id()
        if thread in self._warned_threads:
            return
        self._warned_threads.add(thread)
        request.runtime.context.emit(Notice(message))


def _encode_all(variants: dict[int, Variant]) -> dict[int, str]:
    encoded: dict[int, str] = {}
    for index, variant in variants.items():
        try:
            encoded[index] = base64.b64encode(variant.read_bytes()).decode("ascii")
        except OSError:
            continue
    return encoded


def _rebuild(messages: list[BaseMessage], blocks: dict[tuple[int, int], list[dict[str, Any]]]) -> list[BaseMessage]:
    touched = {m for m, _ in blocks}
    rebuilt: list[BaseMessage] = []
    for m_index, message in enumerate(messages):
        if m_index not in touched:
            rebuilt.append(message)
            continue
        content: list[Any] = []
        for b_index, block in enumerate(message.content):
            content.extend(blocks.get((m_index, b_index), [block]))
        rebuilt.append(message.model_copy(update={"content": content}))
    return rebuilt


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _name(raw: dict[str, Any]) -> str:
    name = raw.get("name") or str(raw.get("attachment_id", ""))[:12]
    return str(name) or "(unnamed)"


