"""Media request projection: reference blocks in history, bytes the model can take in the request.

Hook: ``awrap_model_call``. For this request only (the checkpointed messages are never touched):

1. scrubbing (``media_scrub``): a part whose modality the model or its wire refuses becomes a
   one-line placeholder, with one notice per thread and modality;
2. placement (``media_placement``): media a tool returned stay in its result when the profile
   allows it there, else move into one user message after the whole batch of results (a part
   still in a tool result that may not be there, in a result no batch claims, is scrubbed);
3. bytes: every image reference becomes a stable handle line plus the route's variant, the
   oldest images dropping in whole steps when the request would grow too large. On an
   ``inline`` route the variant is a standard base64 image block, metered by its base64
   length; on a ``files`` route it is the part naming its uploaded file (``media_files``),
   metered by that part's few bytes, so a long session keeps its screenshots. When an image
   has no file this time, the whole request goes inline, within the inline budget; when the
   provider says it no longer has some of the files, they are uploaded again and the call is
   retried once. Every file reference (a PDF, an audio clip, a whole video) becomes the
   standard block of its kind (``file_blocks``), read from the store off the event loop. A
   missing or damaged attachment becomes a placeholder, never a failed request.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage

from dcode.agent.events import Notice
from dcode.agent.media_placement import place_attachments
from dcode.agent.media_policy import MediaPolicy
from dcode.agent.media_scrub import scrub, scrub_tool_results
from dcode.agent.middleware.request_messages import base_messages, request_messages
from dcode.agent.run_context import RunContext, current_thread_id, require_run_context
from dcode.media.attachment import (
    Attachment,
    InvalidReferenceBlock,
    from_reference_block,
    is_reference_block,
)
from dcode.media.errors import MediaError
from dcode.media.file_attachment import (
    FileAttachment,
    from_file_reference_block,
    is_file_reference_block,
)
from dcode.media.file_blocks import standard_block
from dcode.media.handles import handle_for
from dcode.media.limits import ImageRoute
from dcode.media.modality import Modality, media_part
from dcode.media.offload import (
    DEFAULT_OFFLOAD,
    OffloadLimits,
    OffloadPlan,
    base64_length,
    placeholder_text,
    plan_offload,
    refine_offload,
    upper_bound,
)
from dcode.media.store import AttachmentStore
from dcode.media.variants import Variant, VariantService
from dcode.models.image_transport import FILE_PART_BYTES

if TYPE_CHECKING:
    from dcode.agent.media_files import FileImages  # the ``files`` transport's, made by the graph


@dataclass(frozen=True, slots=True)
class _Ref:
    message: int
    block: int
    raw: dict[str, object]


Blocks = dict[tuple[int, int], list[dict[str, object]]]


@dataclass(frozen=True, slots=True)
class _Projected:
    blocks: Blocks
    file_ids: frozenset[str]
    """The file ids the request refers to (none when its images are inline)."""


_NOTICE_NAMES: dict[Modality, str] = {
    "image": "images",
    "audio": "audio",
    "video": "videos",
    "pdf": "PDFs",
    "file": "files",
}


def find_references(
    messages: list[BaseMessage],
    claims: Callable[[object], TypeGuard[dict[str, object]]] = is_reference_block,
) -> list[_Ref]:
    refs: list[_Ref] = []
    for m_index, message in enumerate(messages):
        if isinstance(message.content, list):
            refs.extend(
                _Ref(m_index, b_index, block)
                for b_index, block in enumerate(message.content)
                if claims(block)
            )
    return refs


def unavailable_placeholder(kind: str, name: str, detail: str) -> str:
    return f"[{kind} {name} could not be attached: {detail}]"


def refusal_notice(modality: Modality) -> str:
    return f"this model takes no {_NOTICE_NAMES[modality]}: they are sent as text placeholders"


class MediaProjectionMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    def __init__(
        self,
        store: AttachmentStore,
        variants: VariantService,
        route: ImageRoute,
        *,
        policy: MediaPolicy,
        limits: OffloadLimits = DEFAULT_OFFLOAD,
        files: FileImages | None = None,
    ) -> None:
        """``files``: the Files transport, where the route uses it (None: images inline)."""
        super().__init__()
        self.store = store
        self.variants = variants
        self.route = route
        self.policy = policy
        self.limits = limits
        self.files = files
        self._warned: set[tuple[str, Modality]] = set()
        self._uploads_failing: set[str] = set()

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        scrubbed = scrub(base_messages(request.messages), self.policy)
        placed = scrub_tool_results(place_attachments(scrubbed.messages, self._stays), self.policy)
        for modality in sorted(scrubbed.refused | placed.refused):
            self._notice_once(request, modality)
        messages = placed.messages
        images = find_references(messages)
        files = find_references(messages, is_file_reference_block)
        if not images and not files and messages is request.messages:
            return await handler(request)
        file_blocks = await self._files(files) if files else {}
        projected = await self._project(images, request) if images else _Projected({}, frozenset())
        try:
            return await handler(
                request.override(
                    messages=request_messages(
                        _rebuild(messages, {**projected.blocks, **file_blocks})
                    )
                )
            )
        except Exception as exc:
            stale = self.files.stale(exc, projected.file_ids) if self.files else None
            if stale is None or self.files is None:
                raise
        # The provider no longer has some of the files: drop them, upload again, and retry
        # once. A second file error drops what it names and is the call's error.
        await self.files.forget(stale)
        projected = await self._project(images, request)
        try:
            return await handler(
                request.override(
                    messages=request_messages(
                        _rebuild(messages, {**projected.blocks, **file_blocks})
                    )
                )
            )
        except Exception as exc:
            again = self.files.stale(exc, projected.file_ids)
            if again is not None:
                await self.files.forget(again)
            raise

    def _stays(self, attached: Sequence[object]) -> bool:
        parts = [part for block in attached if (part := media_part(block)) is not None]
        return all(self.policy.stays_in_tool(part.modality) for part in parts)

    async def _files(self, refs: list[_Ref]) -> Blocks:
        return await asyncio.to_thread(_file_blocks, self.store, refs)

    async def _project(self, refs: list[_Ref], request: ModelRequest[RunContext]) -> _Projected:
        attachments: list[Attachment | None] = []
        for ref in refs:
            try:
                attachments.append(from_reference_block(ref.raw))
            except InvalidReferenceBlock:
                attachments.append(None)
        variants: dict[int, Variant | BaseException] = {}
        parts: dict[int, dict[str, object]] = {}
        file_ids: frozenset[str] = frozenset()
        inline = self.files is None
        if self.files is not None:
            plan = await self._plan(attachments, variants, _file_id_size)
            kept = {i: v for i, v in variants.items() if i >= plan.drop and isinstance(v, Variant)}
            resolved = await self.files.parts(kept)
            if isinstance(resolved, str):
                self._files_notice(request, resolved)
                inline = True
            else:
                parts, file_ids = resolved.parts, resolved.file_ids
                self._uploads_failing.discard(current_thread_id())
        if inline:
            plan = await self._plan(attachments, variants, _inline_size)
            encoded = await asyncio.to_thread(
                _encode_all,
                {i: v for i, v in variants.items() if i >= plan.drop and isinstance(v, Variant)},
            )
            parts = {
                i: {"type": "image", "base64": data, "mime_type": _media_type(variants[i])}
                for i, data in encoded.items()
            }
        out: Blocks = {}
        for index, ref in enumerate(refs):
            att, name = attachments[index], _name(ref.raw)
            key = (ref.message, ref.block)
            if att is None:
                out[key] = [
                    _text(unavailable_placeholder("image", name, "its reference is damaged"))
                ]
            elif index < plan.drop:
                out[key] = [
                    _text(
                        placeholder_text(
                            att.display_name,
                            str(self.store.path_for(att)),
                            width=att.width,
                            height=att.height,
                        )
                    )
                ]
            elif isinstance(result := variants.get(index), BaseException) or index not in parts:
                detail = (
                    result.detail
                    if isinstance(result, MediaError) and hasattr(result, "detail")
                    else "unavailable"
                )
                out[key] = [_text(unavailable_placeholder("image", att.display_name, str(detail)))]
            else:
                variant = result
                assert isinstance(variant, Variant)
                handle = handle_for(
                    att,
                    request_size=(variant.width, variant.height),
                    media_type=variant.media_type,
                    path=self.store.path_for(att),
                )
                out[key] = [_text(handle), parts[index]]
        return _Projected(out, file_ids)

    async def _plan(
        self,
        attachments: list[Attachment | None],
        variants: dict[int, Variant | BaseException],
        size: Callable[[int], int],
    ) -> OffloadPlan:
        """The request-size offload, metered by ``size`` (of a variant's bytes), with the
        variants of every image it keeps made (into ``variants``, shared between plans)."""
        bounds = [
            size(upper_bound(a.byte_size, self.route.max_bytes)) if a else 0 for a in attachments
        ]
        first = plan_offload(bounds, self.limits)
        wanted = [
            (i, a)
            for i, a in enumerate(attachments)
            if i >= first.drop and a is not None and i not in variants
        ]
        results = await asyncio.gather(
            *(self.variants.get(a, self.route) for _, a in wanted), return_exceptions=True
        )
        variants.update({i: r for (i, _), r in zip(wanted, results, strict=True)})
        exact = [
            size(v.byte_size) if isinstance(v := variants.get(i), Variant) else None
            for i in range(len(attachments))
        ]
        return refine_offload(first, bounds, exact, self.limits)

    def _files_notice(self, request: ModelRequest[RunContext], reason: str) -> None:
        """One notice while uploads keep failing in a thread, not one a model call."""
        thread = current_thread_id()
        if thread in self._uploads_failing:
            return
        self._uploads_failing.add(thread)
        if request.runtime is not None:
            require_run_context(request.runtime.context).emit(
                Notice(f"images could not be uploaded ({reason}): this request carries them inline")
            )

    def _notice_once(self, request: ModelRequest[RunContext], modality: Modality) -> None:
        key = (current_thread_id(), modality)
        if key in self._warned or request.runtime is None:
            return
        self._warned.add(key)
        require_run_context(request.runtime.context).emit(Notice(refusal_notice(modality)))


def _inline_size(variant_bytes: int) -> int:
    """What an inline image adds to the request: its bytes as base64."""
    return base64_length(variant_bytes)


def _file_id_size(variant_bytes: int) -> int:
    """What a file-id image adds to the request: its part, whatever the image's size."""
    return FILE_PART_BYTES


def _media_type(variant: Variant | BaseException) -> str:
    assert isinstance(variant, Variant)
    return variant.media_type


def _encode_all(variants: dict[int, Variant]) -> dict[int, str]:
    encoded: dict[int, str] = {}
    for index, variant in variants.items():
        try:
            encoded[index] = base64.b64encode(variant.read_bytes()).decode("ascii")
        except OSError:
            continue
    return encoded


def _file_blocks(store: AttachmentStore, refs: list[_Ref]) -> Blocks:
    """Each file reference's standard block, or its placeholder (blocking: run off the loop)."""
    out: Blocks = {}
    for ref in refs:
        att: FileAttachment | None = None
        try:
            att = from_file_reference_block(ref.raw)
            out[(ref.message, ref.block)] = [standard_block(att, store.read_bytes(att))]
        except InvalidReferenceBlock:
            out[(ref.message, ref.block)] = [
                _text(
                    unavailable_placeholder(
                        _kind(ref.raw), _name(ref.raw), "its reference is damaged"
                    )
                )
            ]
        except MediaError as exc:
            detail = getattr(exc, "detail", None) or "unavailable"
            assert att is not None
            out[(ref.message, ref.block)] = [
                _text(unavailable_placeholder(_kind(ref.raw), att.display_name, str(detail)))
            ]
    return out


def _rebuild(messages: list[BaseMessage], blocks: Blocks) -> list[BaseMessage]:
    touched = {m for m, _ in blocks}
    rebuilt: list[BaseMessage] = []
    for m_index, message in enumerate(messages):
        if m_index not in touched:
            rebuilt.append(message)
            continue
        content: list[object] = []
        for b_index, block in enumerate(message.content):
            content.extend(blocks.get((m_index, b_index), [block]))
        rebuilt.append(message.model_copy(update={"content": content}))
    return rebuilt


def _text(text: str) -> dict[str, object]:
    return {"type": "text", "text": text}


def _name(raw: dict[str, object]) -> str:
    part = media_part(raw)
    return part.name if part else "(unnamed)"


def _kind(raw: dict[str, object]) -> str:
    part = media_part(raw)
    return part.modality if part else "file"
