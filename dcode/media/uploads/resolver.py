"""A request variant to a live file id: uploaded once, reused until an hour before it expires.

``UploadResolver.resolve`` is what request projection awaits for each image on a ``files``
route:

1. the documented per-file limits are checked first: a variant too large for a file id raises
   ``UploadRefused`` before anything is sent;
2. a mapping in the index with more than ``refresh_margin`` of life left is the answer, with no
   request at all;
3. otherwise one upload per (scope, variant) is shared by every caller that asks meanwhile
   (singleflight). Each waiter may cancel its own wait; the upload is cancelled only when every
   waiter has left, so one interrupted request never costs another its file;
4. the upload is indexed only when the answer is a whole file object: an id, the bytes that
   were sent and an expiry. Anything less leaves no mapping (``UploadRefused``), and the next
   request uploads again;
5. no room (the provider's quota error, or the documented file count or total bytes, counted
   from the index before the call): the oldest dcode-owned files are listed, every page of
   them, then deleted, and the upload is tried once more.

``forget`` drops mappings a chat error named stale, so the next ``resolve`` uploads anew.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from dcode.media.facts import EXTENSIONS, FORMAT_OF_MEDIA_TYPE
from dcode.media.uploads.index import FileMapping, Scope, UploadIndex
from dcode.media.uploads.policy import DEFAULT_FILES_POLICY, FilesPolicy
from dcode.media.uploads.remote import FilesError, QuotaExceeded, RemoteFile, RemoteFiles


class UploadRefused(FilesError):
    """The variant has no file id this time; the request sends its images inline instead."""


class Uploadable(Protocol):
    """What the resolver needs of a request variant (``dcode.media.variants.Variant``)."""

    @property
    def variant_id(self) -> str: ...

    @property
    def media_type(self) -> str: ...

    @property
    def byte_size(self) -> int: ...

    def read_bytes(self) -> bytes: ...


@dataclass(slots=True)
class _Flight:
    task: asyncio.Task[FileMapping]
    waiters: int = 0


@dataclass(slots=True)
class UploadStats:
    """What this resolver did: uploads made, mappings reused, and mappings replaced inside
    their last hour."""

    uploads: int = 0
    reused: int = 0
    refreshed: int = 0


class UploadResolver:
    def __init__(
        self,
        remote: RemoteFiles,
        index: UploadIndex,
        scope: Scope,
        policy: FilesPolicy = DEFAULT_FILES_POLICY,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.remote = remote
        self.index = index
        self.scope = scope
        self.policy = policy
        self.clock = clock
        self.stats = UploadStats()
        self._flights: dict[tuple[int, str], _Flight] = {}

    async def resolve(self, variant: Uploadable) -> FileMapping:
        """The variant's live file; raises ``UploadRefused`` (or ``FilesError``) when it has none."""
        if variant.byte_size > self.policy.max_image_bytes:
            raise UploadRefused(
                f"{variant.byte_size} bytes is over the {self.policy.max_image_bytes // (1024 * 1024)} MiB a file id may carry"
            )
        known = await asyncio.to_thread(self.index.lookup, self.scope, variant.variant_id)
        if known is not None and known.life_left(self.clock()) > self.policy.refresh_margin:
            self.stats.reused += 1
            return known
        if known is not None:
            self.stats.refreshed += 1
        return await self._join(variant)

    async def forget(self, file_ids: Collection[str]) -> list[FileMapping]:
        """Drop the mappings to ``file_ids`` (the provider said it no longer has them)."""
        return await asyncio.to_thread(self.index.drop_files, self.scope, file_ids)

    async def _join(self, variant: Uploadable) -> FileMapping:
        loop = asyncio.get_running_loop()
        key = (id(loop), variant.variant_id)
        flight = self._flights.get(key)
        if flight is None:
            task = loop.create_task(self._upload(variant), name=f"upload-{variant.variant_id[:12]}")
            flight = self._flights[key] = _Flight(task)
            task.add_done_callback(partial(self._landed, key))
        flight.waiters += 1
        try:
            return await asyncio.shield(flight.task)
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                flight.task.cancel()  # the last waiter left: nobody wants this upload any more

    def _landed(self, key: tuple[int, str], task: asyncio.Task[FileMapping]) -> None:
        flight = self._flights.get(key)
        if flight is not None and flight.task is task:
            del self._flights[key]
        if not task.cancelled():
            task.exception()  # retrieved: waiters that left must not cause a warning

    async def _upload(self, variant: Uploadable) -> FileMapping:
        data = await asyncio.to_thread(variant.read_bytes)
        if len(data) > self.policy.max_image_bytes:
            raise UploadRefused(f"{len(data)} bytes is over what a file id may carry")
        name = (
            f"{self.policy.name_prefix}{variant.variant_id[:40]}.{_extension(variant.media_type)}"
        )
        try:
            if await asyncio.to_thread(self._over_limits, len(data)):
                raise QuotaExceeded("the documented file count or storage limit would be passed")
            answer = await self._send(name, data, variant.media_type)
        except QuotaExceeded:
            await self._make_room()
            try:
                answer = await self._send(name, data, variant.media_type)
            except QuotaExceeded as again:
                raise UploadRefused(
                    f"no room for another file even after releasing old ones: {again}"
                ) from again
        mapping = self._complete(variant.variant_id, answer, len(data))
        await asyncio.to_thread(self.index.put, self.scope, mapping)
        self.stats.uploads += 1
        return mapping

    async def _send(self, name: str, data: bytes, media_type: str) -> RemoteFile:
        return await self.remote.upload(
            name,
            data,
            media_type,
            purpose=self.policy.purpose,
            expires_after=self.policy.expires_after,
        )

    def _complete(self, variant_id: str, answer: RemoteFile, sent: int) -> FileMapping:
        missing = [
            what
            for what, value in (
                ("an id", answer.id),
                ("its bytes", answer.bytes),
                ("an expiry", answer.expires_at),
            )
            if not value
        ]
        if missing:
            raise UploadRefused(
                f"the upload's answer lacks {' and '.join(missing)}: nothing was kept"
            )
        if answer.bytes != sent:
            raise UploadRefused(
                f"the provider stored {answer.bytes} bytes of {sent}: nothing was kept"
            )
        assert answer.expires_at is not None
        assert answer.bytes is not None
        created = answer.created_at or int(self.clock())
        return FileMapping(
            variant_id,
            answer.id,
            answer.bytes,
            int(answer.expires_at),
            int(created),
            answer.filename,
        )

    def _over_limits(self, incoming: int) -> bool:
        mine = [m for m in self.index.mappings(self.scope) if m.life_left(self.clock()) > 0]
        return (
            len(mine) + 1 > self.policy.max_files
            or sum(m.bytes for m in mine) + incoming > self.policy.max_total_bytes
        )

    async def _make_room(self) -> None:
        """Delete the oldest dcode-owned files: every page is listed first, since deleting while
        paging would move the cursor under the listing."""
        owned: list[RemoteFile] = []
        async for remote in self.remote.list(order="asc"):
            if remote.filename.startswith(self.policy.name_prefix):
                owned.append(remote)
        owned.sort(key=lambda f: (f.created_at or 0, f.id))
        doomed = [f.id for f in owned[: self.policy.quota_release]]
        for file_id in doomed:
            await self.remote.delete(file_id)
        await self.forget(doomed)
        # Mappings whose files expired are gone remotely too; the count check must not see them.
        now = self.clock()
        expired = [
            m.file_id
            for m in await asyncio.to_thread(self.index.mappings, self.scope)
            if m.life_left(now) <= 0
        ]
        if expired:
            await self.forget(expired)


def _extension(media_type: str) -> str:
    known = FORMAT_OF_MEDIA_TYPE.get(media_type)
    return EXTENSIONS[known] if known in EXTENSIONS else media_type.rpartition("/")[2] or "bin"
