"""The content-addressed attachment store: admission of a batch, and lookup by id.

dcode passes ``$DCODE_HOME/attachments/`` as the root. Layout::

    objects/ab/<sha256>.jpg|png|webp   normalized bytes (read-only, 0o400)
    objects/ab/<sha256>.json           facts sidecar (first admission's name and original)
    variants/…                         request variants (see ``variant_cache``)

The key is the sha256 of the *normalized* bytes, so pasting the same screenshot twice stores
it once, and an id can be verified by anyone holding the bytes. Writes are atomic and private
(``private_files.write_private``); reads re-hash, so a damaged object is reported as unavailable
instead of being sent.

Admission is all or nothing per batch: every source is normalized in memory first, and only
when all of them pass is anything written. A refusal raises one
:class:`~dcode.media.errors.AdmissionError` naming each failing file and its reason.

Everything here is synchronous CPU and disk work. Callers on the event loop must run
``admit`` off the loop: ``await store.admit_async(sources)`` does exactly that.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from dcode.media.attachment import (
    Attachment,
    InvalidReferenceBlock,
    clip_name,
    from_reference_block,
    is_attachment_id,
    to_reference_block,
)
from dcode.media.encode import DEFAULT_POLICY, EncoderPolicy
from dcode.media.errors import (
    AdmissionError,
    AttachmentUnavailableError,
    ImageRejected,
    Rejection,
    RejectReason,
)
from dcode.media.file_attachment import (
    FileAttachment,
    FileKind,
    from_file_reference_block,
    to_file_reference_block,
)
from dcode.media.limits import DEFAULT_LIMITS, AdmissionLimits
from dcode.media.normalize import NormalizedImage, normalize_image, own_jpeg
from dcode.media.stages import stage
from dcode.regular_files import NotRegularFile, open_regular
from dcode.settings.private_files import READ_ONLY_FILE, write_private

__all__ = [
    "AttachmentStore",
    "Source",
    "SourceLike",
    "from_reference_block",
    "to_reference_block",
]


@dataclass(frozen=True, slots=True)
class Source:
    """One thing to admit: a file on disk or bytes in memory (a clipboard paste), plus the
    name the user should see for it."""

    name: str
    path: Path | None = None
    data: bytes | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.data is None):
            raise ValueError("a Source needs exactly one of path or data")

    @classmethod
    def from_path(cls, path: Path | str, name: str | None = None) -> Source:
        p = Path(path)
        return cls(name=name or p.name, path=p)

    @classmethod
    def from_bytes(cls, data: bytes, name: str) -> Source:
        return cls(name=name, data=data)


SourceLike: TypeAlias = Source | Path | tuple[bytes, str]


def as_source(item: SourceLike) -> Source:
    match item:
        case Source():
            return item
        case Path():
            return Source.from_path(item)
        case (bytes() as data, str() as name):
            return Source.from_bytes(data, name)
        case _:
            raise TypeError(
                f"cannot admit {type(item).__name__}; pass a Source, Path or (bytes, name)"
            )


class AttachmentStore:
    """Normalized attachments under ``root``; safe to share between threads."""

    def __init__(
        self,
        root: Path | str,
        limits: AdmissionLimits = DEFAULT_LIMITS,
        policy: EncoderPolicy = DEFAULT_POLICY,
    ) -> None:
        self.root = Path(root)
        self.limits = limits
        self.policy = policy

    @property
    def objects_dir(self) -> Path:
        return self.root / "objects"

    @property
    def variants_dir(self) -> Path:
        return self.root / "variants"

    # -- admission -------------------------------------------------------------------------

    def admit(self, sources: Sequence[SourceLike]) -> list[Attachment]:
        """Normalize and store a batch (one user message); all or nothing.

        Raises :class:`AdmissionError` listing every refused source; nothing is written then.
        """
        normalized = self.normalize(sources)
        with stage("store"):
            return [self._put(image, name) for image, name in normalized]

    def admit_own_jpeg(self, data: bytes, name: str, *, width: int, height: int) -> Attachment:
        """A JPEG dcode's own encoder made (a sampled video frame): stored byte for byte once
        its header shows the facts claimed (see :func:`~dcode.media.normalize.own_jpeg`),
        else admitted like any source. Raises :class:`AdmissionError` like :meth:`admit`."""
        name = clip_name(name)
        image = own_jpeg(data, name, width, height, self.limits)
        if image is None:
            return self.admit([Source.from_bytes(data, name)])[0]
        with stage("store"):
            return self._put(image, name)

    async def admit_async(self, sources: Sequence[SourceLike]) -> list[Attachment]:
        """``admit`` on a worker thread, for callers on the event loop."""
        import asyncio  # here: the synchronous callers (dcode media inspect) never pay for it

        return await asyncio.to_thread(self.admit, sources)

    def normalize(self, sources: Sequence[SourceLike]) -> list[tuple[NormalizedImage, str]]:
        """The admission checks and normalization of ``admit`` without writing anything."""
        batch = [as_source(s) for s in sources]
        self._check_batch(batch)
        results: list[tuple[NormalizedImage, str]] = []
        rejections: list[Rejection] = []
        for source in batch:
            name = clip_name(source.name)
            try:
                data = self._read(source, name)
                results.append((normalize_image(data, name, self.limits, self.policy), name))
            except ImageRejected as exc:
                rejections.append(exc.rejection)
        if rejections:
            raise AdmissionError(tuple(rejections))
        return results

    def _check_batch(self, batch: list[Source]) -> None:
        limit = self.limits.max_images_per_message
        if len(batch) > limit:
            raise AdmissionError(
                (
                    Rejection(
                        "message",
                        RejectReason.TOO_MANY_IMAGES,
                        f"too many images: {len(batch)} in one message, at most {limit}",
                    ),
                )
            )
        total = sum(_declared_size(s) for s in batch)
        cap = self.limits.max_message_source_bytes
        if total > cap:
            raise AdmissionError(
                (
                    Rejection(
                        "message",
                        RejectReason.MESSAGE_TOO_LARGE,
                        f"images too large together: {total:,} bytes in one message, "
                        f"at most {cap:,}",
                    ),
                )
            )

    def _read(self, source: Source, name: str) -> bytes:
        if source.data is not None:
            return source.data
        assert source.path is not None
        cap = self.limits.max_source_bytes
        try:
            with open_regular(source.path) as fh:  # a named pipe would block the read for ever
                size = os.fstat(fh.fileno()).st_size
                if size > cap:
                    raise ImageRejected(
                        Rejection(
                            name,
                            RejectReason.TOO_MANY_BYTES,
                            f"too large: {size:,} bytes exceeds {cap:,}",
                        )
                    )
                return fh.read(cap + 1)  # a file that grew since fstat() still trips the cap
        except NotRegularFile as exc:
            raise ImageRejected(
                Rejection(name, RejectReason.UNREADABLE, f"cannot read: it {exc.strerror}")
            ) from exc
        except OSError as exc:
            raise ImageRejected(
                Rejection(name, RejectReason.UNREADABLE, f"cannot read: {exc.strerror or exc}")
            ) from exc

    def receive(self, block: object, data: bytes) -> Attachment:
        """An image another dcode admitted, sent with its reference block (a client of a
        served session sends its pasted images' bytes): stored as that admission stored it,
        original facts and all, once the bytes prove to be it: their digest is the block's id,
        and normalizing them again here changes nothing. Raises :class:`AdmissionError` in one
        line otherwise; nothing is written then."""
        try:
            att = from_reference_block(block)
        except InvalidReferenceBlock as exc:
            raise _refused(
                "?", RejectReason.OUTPUT_INVALID, f"not a reference block: {exc}"
            ) from None
        if hashlib.sha256(data).hexdigest() != att.id:
            raise _refused(att.name, RejectReason.CORRUPT, "its bytes are not the image it names")
        if self.contains(att) and self._sidecar(att.id).exists():
            return att
        try:
            image = normalize_image(data, att.name, self.limits, self.policy)
        except ImageRejected as exc:
            raise AdmissionError((exc.rejection,)) from None
        if image.digest != att.id or image.attachment(att.name).media_type != att.media_type:
            raise _refused(att.name, RejectReason.OUTPUT_INVALID, "not a normalized image")
        with stage("store"):
            if not _holds(self.path_for(att), att.id, len(data)):
                write_private(self.path_for(att), data, mode=READ_ONLY_FILE)
            write_private(self._sidecar(att.id), json.dumps(to_reference_block(att)).encode())
        return att

    # -- storage ---------------------------------------------------------------------------

    def _put(self, image: NormalizedImage, name: str) -> Attachment:
        att = image.attachment(name)
        path = self.path_for(att)
        if not _holds(path, image.digest, len(image.data)):
            write_private(
                path, image.data, mode=READ_ONLY_FILE
            )  # no edit in place, by the agent's tools either
        sidecar = self._sidecar(att.id)
        if not sidecar.exists():
            write_private(sidecar, json.dumps(to_reference_block(att)).encode())
        return att

    def admit_file(
        self, data: bytes, *, kind: FileKind, media_type: str, name: str, detail: str = ""
    ) -> FileAttachment:
        """Store a non-image file byte for byte (a PDF's pages, an audio clip); idempotent.

        The caller has checked the kind and the size; nothing is re-encoded here."""
        if not data:
            raise ValueError("an attachment cannot be empty")
        att = FileAttachment(
            id=hashlib.sha256(data).hexdigest(),
            kind=kind,
            media_type=media_type,
            byte_size=len(data),
            name=clip_name(name),
            detail=detail,
        )
        path = self.path_for(att)
        with stage("store"):
            if not _holds(path, att.id, len(data)):
                write_private(path, data, mode=READ_ONLY_FILE)
            sidecar = self._sidecar(att.id)
            if not sidecar.exists():
                write_private(sidecar, json.dumps(to_file_reference_block(att)).encode())
        return att

    def get_file(self, attachment_id: str) -> FileAttachment:
        """The stored facts of a file attachment (as first admitted)."""
        if not is_attachment_id(attachment_id):
            raise AttachmentUnavailableError(str(attachment_id)[:64] or "?", "not an attachment id")
        try:
            return from_file_reference_block(json.loads(self._sidecar(attachment_id).read_bytes()))
        except FileNotFoundError as exc:
            raise AttachmentUnavailableError(attachment_id, "not in the store") from exc
        except (OSError, ValueError, InvalidReferenceBlock) as exc:
            raise AttachmentUnavailableError(attachment_id, f"unreadable facts: {exc}") from exc

    def path_for(self, attachment: Attachment | FileAttachment) -> Path:
        """Where the normalized bytes live (whether or not they are there)."""
        return self.objects_dir / attachment.id[:2] / f"{attachment.id}.{attachment.extension}"

    def _sidecar(self, attachment_id: str) -> Path:
        return self.objects_dir / attachment_id[:2] / f"{attachment_id}.json"

    def get(self, attachment_id: str) -> Attachment:
        """The stored facts of ``attachment_id`` (as first admitted)."""
        if not is_attachment_id(attachment_id):
            raise AttachmentUnavailableError(str(attachment_id)[:64] or "?", "not an attachment id")
        try:
            block: object = json.loads(self._sidecar(attachment_id).read_bytes())
            return from_reference_block(block)
        except FileNotFoundError as exc:
            raise AttachmentUnavailableError(attachment_id, "not in the store") from exc
        except (OSError, ValueError, InvalidReferenceBlock) as exc:
            raise AttachmentUnavailableError(attachment_id, f"unreadable facts: {exc}") from exc

    def contains(self, attachment: Attachment | FileAttachment) -> bool:
        return self.path_for(attachment).is_file()

    def read_bytes(self, attachment: Attachment | FileAttachment) -> bytes:
        """The normalized bytes, verified against the id; raises
        :class:`AttachmentUnavailableError` when missing or damaged."""
        try:
            data = self.path_for(attachment).read_bytes()
        except FileNotFoundError as exc:
            raise AttachmentUnavailableError(attachment.id, "missing from the store") from exc
        except OSError as exc:
            raise AttachmentUnavailableError(attachment.id, f"unreadable: {exc}") from exc
        if hashlib.sha256(data).hexdigest() != attachment.id:
            raise AttachmentUnavailableError(attachment.id, "damaged (digest mismatch)")
        return data


def _declared_size(source: Source) -> int:
    if source.data is not None:
        return len(source.data)
    assert source.path is not None
    try:
        return source.path.stat().st_size
    except OSError:
        return 0  # reported as unreadable by _read, with the file's name


def _holds(path: Path, digest: str, size: int) -> bool:
    """Dedup check: the object is already there, complete and intact."""
    try:
        if path.stat().st_size != size:
            return False
        return hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except OSError:
        return False


def _refused(name: str, reason: RejectReason, detail: str) -> AdmissionError:
    return AdmissionError((Rejection(name, reason, detail),))
