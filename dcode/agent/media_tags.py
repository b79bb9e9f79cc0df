"""Media in the part of a conversation being summarized, as tags the summarizer keeps (tier 2).

A summarizer reads text, and the archive is text: an image block, whether one of dcode's
references or inline base64, reaches neither. So before a summary, each media part of the
summarized messages becomes one tag naming a file that ``read_file`` opens again::

    <image url="PATH"/>  <audio url="PATH"/>  <video url="PATH"/>  <file url="PATH" mime="application/pdf"/>

- A reference block names an object of the attachment store: PATH is that object. Its bytes
  are already there (nothing is copied), and read_file on a store path re-admits nothing.
- An inline payload (a tool that returned raw base64, a ``data:`` URL) is admitted into the
  store once, content-addressed: that object is then the only copy, and PATH names it.
- An http(s) URL is kept as it is.
- Anything else (a damaged reference, an object gone from the store, bytes that do not decode
  or that the store refuses) becomes ``<image error="failed_to_offload"/>`` (with its own
  kind's tag name), and is counted so that the caller can say so.

This is the one place a media part becomes a tag. The rewritten messages serve the summary's
transcript and the archive only (the history keeps its blocks): a tag travels as a
``TAG_BLOCK`` block, which the transcript and the archive write as it is, where the archive
escapes text. Admission is blocking: call ``tag_media`` off the event loop.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, TypeGuard

from langchain_core.messages import BaseMessage

from dcode.media.attachment import Attachment, from_reference_block, is_reference_block
from dcode.media.file_attachment import (
    FileAttachment,
    FileKind,
    from_file_reference_block,
    is_file_reference_block,
)
from dcode.media.inline import Inline, Remote, payload
from dcode.media.modality import UNNAMED, MediaPart, Modality, media_part

if (
    TYPE_CHECKING
):  # the store loads Pillow: the summarization module, which imports this one, does not need it
    from dcode.media.store import AttachmentStore

TAG_BLOCK = "dcode_media_tag"
FAILED = "failed_to_offload"

_TAG_NAMES: dict[Modality, str] = {
    "image": "image",
    "audio": "audio",
    "video": "video",
    "pdf": "file",
    "file": "file",
}
_FILE_KINDS: dict[Modality, FileKind] = {
    "audio": "audio",
    "video": "video",
    "pdf": "file",
    "file": "file",
}
_URL_TAG = re.compile(r'<(?:image|audio|video|file) url="')


def media_tag(modality: Modality, url: str | None, mime: str = "") -> str:
    """The tag of one media part at ``url``; the failure tag when there is none."""
    name = _TAG_NAMES[modality]
    if url is None:
        return f'<{name} error="{FAILED}"/>'
    mime_attr = f' mime="{_attr(mime)}"' if name == "file" and mime else ""
    return f'<{name} url="{_attr(url)}"{mime_attr}/>'


def mentions_media(text: str) -> bool:
    """Whether ``text`` (a summary) keeps a tag naming a file."""
    return _URL_TAG.search(text) is not None


class TagBlock(TypedDict):
    """A media tag in a message's content, for the summary's transcript and the archive."""

    type: str  # always TAG_BLOCK
    tag: str


def tag_block(tag: str) -> TagBlock:
    return {"type": TAG_BLOCK, "tag": tag}


def is_tag_block(block: object) -> TypeGuard[TagBlock]:
    return (
        isinstance(block, dict)
        and block.get("type") == TAG_BLOCK
        and isinstance(block.get("tag"), str)
    )


@dataclass(frozen=True, slots=True)
class Tagged:
    """The messages with every media part a tag, and how many parts could not be kept."""

    messages: list[BaseMessage]
    failed: int


def tag_media(messages: Sequence[BaseMessage], store: AttachmentStore | None) -> Tagged:
    """``messages`` with each media part replaced by its tag (see the module doc); without a
    store, no part can be kept but a remote URL."""
    out: list[BaseMessage] = []
    failed = 0
    for message in messages:
        if not isinstance(message.content, list):
            out.append(message)
            continue
        content: list[object] = []
        changed = False
        for block in message.content:
            part = media_part(block)
            if part is None:
                content.append(block)
                continue
            assert isinstance(block, dict)
            url, mime = _kept(block, part, store)
            if url is None:
                failed += 1
            content.append(tag_block(media_tag(part.modality, url, mime)))
            changed = True
        out.append(message.model_copy(update={"content": content}) if changed else message)
    return Tagged(out, failed)


def _kept(
    block: dict[str, object], part: MediaPart, store: AttachmentStore | None
) -> tuple[str | None, str]:
    """Where the part's content is, and its MIME type; (None, "") when it cannot be kept."""
    try:
        match found := _stored(block, part, store):
            case Remote(url=url):
                return url, part.mime_type
            case Attachment() | FileAttachment() if store is not None and store.contains(found):
                return str(store.path_for(found)), found.media_type
    except Exception:  # noqa: BLE001 - a damaged reference or payload, a refused admission, a decoder's
        pass  # own error: one part that cannot be kept is marked lost, it never stops the compaction
    return None, ""


def _stored(
    block: dict[str, object], part: MediaPart, store: AttachmentStore | None
) -> Attachment | FileAttachment | Inline | Remote | None:
    if is_reference_block(block):
        return from_reference_block(block)
    if is_file_reference_block(block):
        return from_file_reference_block(block)
    found = payload(block)
    if not isinstance(found, Inline) or store is None:
        return found  # a remote URL, or nothing to store
    return _admit(store, found, part)


def _admit(store: AttachmentStore, inline: Inline, part: MediaPart) -> Attachment | FileAttachment:
    name = part.name if part.name != UNNAMED else f"inline {part.modality}"
    if part.modality == "image":
        return store.admit([(inline.data, name)])[0]
    mime = inline.mime_type or part.mime_type
    return store.admit_file(
        inline.data, kind=_FILE_KINDS[part.modality], media_type=mime, name=name
    )


def _attr(value: str) -> str:
    return html.escape(value, quote=True)
