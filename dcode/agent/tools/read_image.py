"""read_file on an image: admitted into the attachment store like a pasted one, so history holds
a reference and each request carries the route's variant.

A path inside the store's objects directory (the request-size offload placeholder names one)
is that attachment already: its reference is returned as it is, nothing is admitted again.
Other files are read through the backend (a regular file only, each read under its deadline);
one over the size cap is handed to the store by path, which refuses it without reading it.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.errors import fail
from dcode.agent.tools.media_result import media_result
from dcode.agent.tools.read_file import NAME, BinaryFile
from dcode.media.attachment import Attachment, clip_name, is_attachment_id, to_reference_block
from dcode.media.errors import AdmissionError, MediaError
from dcode.media.store import AttachmentStore, Source


async def read_image(store: AttachmentStore, backend: Backend, file: BinaryFile) -> list[dict]:
    path = backend.resolve(file.path)
    data = (
        await backend.read_bytes(file.path) if file.size <= store.limits.max_source_bytes else None
    )
    try:
        att = await asyncio.to_thread(_admitted, store, path, file.display, data)
    except AdmissionError as exc:
        reasons = "; ".join(r.detail for r in exc.rejections)
        fail(f"{NAME}: {file.display} could not be read as an image: {reasons}")
    original = att.original
    size = f"{original.width}x{original.height}"
    if (att.width, att.height) != (original.width, original.height):
        size += f", stored as {att.width}x{att.height}"
    return media_result(f"Read image {file.display} ({size}).", [to_reference_block(att)])


def _admitted(store: AttachmentStore, path: Path, shown: str, data: bytes | None) -> Attachment:
    stored = _stored(store, path)
    if stored is not None:
        return replace(stored, name=clip_name(shown))
    source = Source.from_path(path, shown) if data is None else Source.from_bytes(data, shown)
    (att,) = store.admit([source])
    return att


def _stored(store: AttachmentStore, path: Path) -> Attachment | None:
    """The attachment ``path`` holds when it is an intact object of ``store``, else None."""
    try:
        if path.parent.parent != store.objects_dir.resolve() or not is_attachment_id(path.stem):
            return None
        att = store.get(path.stem)
        if store.path_for(att).resolve() != path:
            return None
        store.read_bytes(att)  # verified against its id
    except (MediaError, OSError):
        return None
    return att
