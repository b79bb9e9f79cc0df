"""The images of a served session's prompt, carried to the server's attachment store.

A prompt's images are reference blocks (``dcode.media.attachment``): the message names each
normalized image by its digest and the attachment store holds the bytes. A client of a dcode
server admits what the user pasted into its own store, as a local session does; the server's
graph reads the server's store, which has never seen those bytes. So before the run that sends
the prompt, the client puts each image (its block and bytes) in the server's key-value store,
and the run's context names them by id (the context is kept in every checkpoint's metadata:
ids, never bytes). The server takes each one out into its attachment store before the run
starts, once the bytes prove to be the image the block names (``AttachmentStore.receive``).
The thread's history holds the reference blocks only, as a local session's does.
"""

# Any: langgraph-sdk's client and the server's key-value store are untyped here

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from dcode.media.attachment import from_reference_block, is_attachment_id, is_reference_block

if TYPE_CHECKING:
    from dcode.media.store import AttachmentStore

CARRIED_KEY = "attachments"
"""The run context's key for the ids of the images its prompt carries."""
NAMESPACE = ("dcode", "attachments")
"""Where the server's key-value store holds a carried image until its run takes it."""


def carry(content: object, store: AttachmentStore) -> dict[str, dict[str, object]]:
    """Each image a prompt's content names, by id, with its normalized bytes from ``store``
    (blocking: it reads files). Raises ``AttachmentUnavailableError`` for one not there."""
    blocks = [b for b in content if is_reference_block(b)] if isinstance(content, list) else []
    carried: dict[str, dict[str, object]] = {}
    for block in blocks:
        attachment = from_reference_block(block)
        data = base64.b64encode(store.read_bytes(attachment)).decode("ascii")
        carried[attachment.id] = {"block": block, "data": data}
    return carried


async def upload(client: Any, carried: dict[str, dict[str, object]]) -> list[str]:
    """Put the carried images in the server's key-value store; returns their ids."""
    for key, value in carried.items():
        await client.store.put_item(list(NAMESPACE), key=key, value=value)
    return list(carried)


async def receive(ids: object, kv: Any, store: AttachmentStore) -> int:
    """Take the images a run's context names out of the server's key-value store ``kv`` into
    its attachment store; returns how many were taken. Raises ``ValueError`` (or an
    ``AdmissionError``) in one line for one missing or not right."""
    import asyncio

    taken = 0
    for key in ids if isinstance(ids, list) else []:
        if not is_attachment_id(key):
            raise ValueError(f"not an attachment id: {str(key)[:64]!r}")
        item = await kv.aget(NAMESPACE, key)
        if item is None:
            continue  # taken by an earlier run of the same prompt (or never sent): read as usual
        value = item.value if isinstance(item.value, dict) else {}
        await asyncio.to_thread(store.receive, value.get("block"), _bytes(value.get("data")))
        await kv.adelete(NAMESPACE, key)
        taken += 1
    return taken


def _bytes(data: object) -> bytes:
    if not isinstance(data, str):
        raise ValueError("a carried image has no data")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a carried image is not base64") from None
