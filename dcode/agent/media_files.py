"""The ``files`` image transport of request projection: variants to file-id parts, and what a
chat error about those ids means.

``FileImages.parts`` resolves every image a request keeps to its uploaded file, all at once
(``UploadResolver`` shares one upload per variant); when any of them has no file, the answer is
None and the request carries its images inline instead, so a provider whose Files API is down
still sees every image it can take. ``FileImages.stale`` reads a failed chat call: the ids it
says are gone (``dcode/media/uploads/stale.py``), which ``forget`` drops so that the one retry
uploads them again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from dcode.media.uploads.index import FileMapping
from dcode.media.uploads.remote import FilesError
from dcode.media.uploads.resolver import UploadResolver
from dcode.media.uploads.stale import StaleFiles, stale_files
from dcode.media.variants import Variant
from dcode.models.image_transport import file_image_part

_FILE_ERROR_STATUSES = frozenset({400, 404, 410, 422})


@dataclass(frozen=True, slots=True)
class ResolvedParts:
    parts: dict[int, dict[str, object]]
    """Image index → its file-id content part."""
    file_ids: frozenset[str]


class FileImages:
    def __init__(self, resolver: UploadResolver, wire: str) -> None:
        self.resolver = resolver
        self.wire = wire

    async def parts(self, variants: Mapping[int, Variant]) -> ResolvedParts | str:
        """Every variant's file part, or the reason (one line) why not all of them have one."""
        indices = list(variants)
        results = await asyncio.gather(
            *(self.resolver.resolve(variants[i]) for i in indices), return_exceptions=True
        )
        failures = [r for r in results if isinstance(r, BaseException)]
        for failure in failures:
            if not isinstance(failure, FilesError | OSError):
                raise failure  # a bug, or a cancellation: not a reason to go inline
        if failures:
            return str(failures[0]) or type(failures[0]).__name__
        mappings = [r for r in results if isinstance(r, FileMapping)]
        parts = {
            i: file_image_part(self.wire, m.file_id) for i, m in zip(indices, mappings, strict=True)
        }
        return ResolvedParts(parts, frozenset(m.file_id for m in mappings))

    def stale(self, exc: BaseException, used: Collection[str]) -> StaleFiles | None:
        """The ids of ``used`` that a failed chat call says the provider no longer has."""
        import openai

        from dcode.models.errors import api_message

        if (
            not used
            or not isinstance(exc, openai.APIStatusError)
            or exc.status_code not in _FILE_ERROR_STATUSES
        ):
            return None
        return stale_files(api_message(exc), used)

    async def forget(self, stale: StaleFiles) -> None:
        await self.resolver.forget(stale.ids)
