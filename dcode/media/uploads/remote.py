"""What dcode needs of a provider's Files API, independent of the HTTP that speaks it.

``dcode/models/files_api.py`` implements it for OpenAI-compatible endpoints; the resolver and
``dcode files`` only see this protocol, so the rules about what to index, when to refresh and
what to delete on a quota error are tested against any implementation alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """A file object as the provider answered it; a field it left out is None."""

    id: str
    bytes: int | None
    created_at: int | None
    expires_at: int | None
    filename: str
    purpose: str = ""
    status: str = ""


class FilesError(Exception):
    """A Files request failed; the message is one line for the user."""


class QuotaExceeded(FilesError):
    """The provider (or the documented limits, checked first) has no room for another file."""


class RemoteFiles(Protocol):
    async def upload(
        self, name: str, data: bytes, media_type: str, *, purpose: str, expires_after: int
    ) -> RemoteFile:
        """Upload ``data``; raises ``QuotaExceeded`` when there is no room, ``FilesError`` else."""
        ...

    def list(self, *, order: Literal["asc", "desc"] = "asc") -> AsyncIterator[RemoteFile]:
        """Every file of the key, all pages, oldest first by default."""
        ...

    async def retrieve(self, file_id: str) -> RemoteFile | None:
        """The file, or None when the provider has no such file."""
        ...

    async def delete(self, file_id: str) -> bool:
        """Delete the file; False when it was already gone."""
        ...
