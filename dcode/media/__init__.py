"""dcode's media core: admission, the attachment store, request variants and offload.

Pure core: nothing here imports a UI or langchain. Names are exported lazily (PEP 562) so
that ``import dcode.media`` stays free of Pillow until an image is actually handled; the
input box's ``detect_media_kind`` and the reference-block helpers never load it at all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "AdmissionError": "errors",
    "AttachmentUnavailableError": "errors",
    "ImageRejected": "errors",
    "MediaError": "errors",
    "RejectReason": "errors",
    "Rejection": "errors",
    "VideoNotSupportedError": "errors",
    "AdmissionLimits": "limits",
    "DEFAULT_LIMITS": "limits",
    "DEFAULT_ROUTE": "limits",
    "ImageRoute": "limits",
    "Attachment": "attachment",
    "OriginalFacts": "attachment",
    "from_reference_block": "attachment",
    "is_reference_block": "attachment",
    "to_reference_block": "attachment",
    "detect_media_kind": "kinds",
    "estimate_image_tokens": "tokens",
    "AttachmentStore": "store",
    "Source": "store",
    "normalize_image": "normalize",
    "TransformPool": "pool",
    "Variant": "variants",
    "VariantService": "variants",
    "handle_line": "handles",
    "handle_for": "handles",
    "inspect_path": "inspect",
    "OffloadLimits": "offload",
    "plan_offload": "offload",
    "refine_offload": "offload",
    "placeholder_text": "offload",
}

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_ROUTE",
    "AdmissionError",
    "AdmissionLimits",
    "Attachment",
    "AttachmentStore",
    "AttachmentUnavailableError",
    "ImageRejected",
    "ImageRoute",
    "MediaError",
    "OffloadLimits",
    "OriginalFacts",
    "RejectReason",
    "Rejection",
    "Source",
    "TransformPool",
    "Variant",
    "VariantService",
    "VideoNotSupportedError",
    "detect_media_kind",
    "estimate_image_tokens",
    "from_reference_block",
    "handle_for",
    "handle_line",
    "inspect_path",
    "is_reference_block",
    "normalize_image",
    "placeholder_text",
    "plan_offload",
    "refine_offload",
    "to_reference_block",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dcode.media' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"dcode.media.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from dcode.media.attachment import (
        Attachment,
        OriginalFacts,
        from_reference_block,
        is_reference_block,
        to_reference_block,
    )
    from dcode.media.errors import (
        AdmissionError,
        AttachmentUnavailableError,
        ImageRejected,
        MediaError,
        Rejection,
        RejectReason,
        VideoNotSupportedError,
    )
    from dcode.media.handles import handle_for, handle_line
    from dcode.media.inspect import inspect_path
    from dcode.media.kinds import detect_media_kind
    from dcode.media.limits import DEFAULT_LIMITS, DEFAULT_ROUTE, AdmissionLimits, ImageRoute
    from dcode.media.normalize import normalize_image
    from dcode.media.offload import OffloadLimits, placeholder_text, plan_offload, refine_offload
    from dcode.media.pool import TransformPool
    from dcode.media.store import AttachmentStore, Source
    from dcode.media.tokens import estimate_image_tokens
    from dcode.media.variants import Variant, VariantService
