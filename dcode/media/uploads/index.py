"""Which remote file holds which request variant: ``$DCODE_HOME/uploads.json`` (0600).

An entry is keyed by the endpoint, the key scope and the variant id, and records the file id,
its bytes, its name and when it expires. The key scope is a hash of the API key, so one file
never holds a key, and two keys on one endpoint (two organisations, say) never share ids.

The file is JSON, replaced atomically; a writer holds ``uploads.lock`` while it reads, changes
and replaces it, so two processes adding mappings at once both keep theirs. A file that does
not parse, or an entry that lacks a field, reads as absent: the next upload writes a good one.
An I/O failure (a directory in its place, no permission) is an error, never an empty index,
since silently re-uploading every image on every request would be far worse than saying so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from pathlib import Path

from dcode.settings.private_files import one_writer, write_private

INDEX_NAME = "uploads.json"
_LOCK_NAME = "uploads.lock"
_FORMAT = 1
_SCOPE_SALT = b"dcode files scope\0"


@dataclass(frozen=True, slots=True)
class Scope:
    """Where files live: an endpoint, and the hash of the key that owns them there."""

    endpoint: str
    key_hash: str

    @classmethod
    def of(cls, base_url: str, api_key: str) -> Scope:
        digest = hashlib.sha256(_SCOPE_SALT + api_key.encode("utf-8")).hexdigest()
        return cls(base_url.rstrip("/"), digest[:32])

    @property
    def name(self) -> str:
        return f"{self.endpoint}#{self.key_hash}"

    def __str__(self) -> str:
        return f"{self.endpoint} (key {self.key_hash[:8]})"


@dataclass(frozen=True, slots=True)
class FileMapping:
    variant_id: str
    file_id: str
    bytes: int
    expires_at: int
    created_at: int
    filename: str

    def life_left(self, now: float) -> float:
        return self.expires_at - now

    @classmethod
    def parse(cls, variant_id: str, raw: object) -> FileMapping | None:
        if not isinstance(raw, dict):
            return None
        try:
            mapping = cls(
                variant_id=variant_id,
                file_id=str(raw["file_id"]),
                bytes=int(raw["bytes"]),
                expires_at=int(raw["expires_at"]),
                created_at=int(raw.get("created_at", 0)),
                filename=str(raw.get("filename", "")),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return mapping if mapping.file_id and mapping.bytes >= 0 else None

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        del data["variant_id"]
        return data


Mappings = dict[str, FileMapping]
"""One scope's mappings by variant id."""


class UploadIndex:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / INDEX_NAME
        self._cache: tuple[tuple[int, int, int], dict[str, Mappings]] | None = None

    def lookup(self, scope: Scope, variant_id: str) -> FileMapping | None:
        return self._read().get(scope.name, {}).get(variant_id)

    def mappings(self, scope: Scope) -> list[FileMapping]:
        """The scope's mappings, oldest upload first."""
        return sorted(
            self._read().get(scope.name, {}).values(), key=lambda m: (m.created_at, m.file_id)
        )

    def put(self, scope: Scope, mapping: FileMapping) -> None:
        def change(scopes: dict[str, Mappings]) -> None:
            scopes.setdefault(scope.name, {})[mapping.variant_id] = mapping

        self._change(change)

    def drop_files(self, scope: Scope, file_ids: Collection[str]) -> list[FileMapping]:
        """Forget the mappings to ``file_ids``; returns the ones that were there."""
        return self._drop(scope, lambda m: m.file_id in file_ids)

    def drop_variants(self, scope: Scope, variant_ids: Collection[str]) -> list[FileMapping]:
        return self._drop(scope, lambda m: m.variant_id in variant_ids)

    def drop_scope(self, scope: Scope) -> list[FileMapping]:
        return self._drop(scope, lambda m: True)

    def _drop(self, scope: Scope, doomed: Callable[[FileMapping], bool]) -> list[FileMapping]:
        dropped: list[FileMapping] = []

        def change(scopes: dict[str, Mappings]) -> None:
            mine = scopes.get(scope.name, {})
            for variant_id, mapping in list(mine.items()):
                if doomed(mapping):
                    dropped.append(mine.pop(variant_id))
            if not mine:
                scopes.pop(scope.name, None)

        self._change(change)
        return dropped

    def _change(self, change: Callable[[dict[str, Mappings]], None]) -> None:
        with self._locked():
            self._cache = None
            scopes = {name: dict(mappings) for name, mappings in self._read().items()}
            change(scopes)
            data = {
                "version": _FORMAT,
                "scopes": {
                    name: {vid: m.to_json() for vid, m in sorted(mappings.items())}
                    for name, mappings in sorted(scopes.items())
                    if mappings
                },
            }
            write_private(self.path, json.dumps(data, indent=1) + "\n")
            self._cache = None

    def _read(self) -> dict[str, Mappings]:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return {}
        stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        raw = self.path.read_bytes()  # an I/O failure is the caller's error, not an empty index
        scopes = _parse(raw)
        self._cache = (stamp, scopes)
        return scopes

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        return one_writer(self.home / _LOCK_NAME)


def _parse(raw: bytes) -> dict[str, Mappings]:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return {}
    scopes = (
        data.get("scopes") if isinstance(data, dict) and data.get("version") == _FORMAT else None
    )
    if not isinstance(scopes, dict):
        return {}
    out: dict[str, Mappings] = {}
    for name, entries in scopes.items():
        if not isinstance(entries, dict):
            continue
        mappings = {
            vid: m
            for vid, raw_entry in entries.items()
            if (m := FileMapping.parse(str(vid), raw_entry)) is not None
        }
        if mappings:
            out[str(name)] = mappings
    return out
