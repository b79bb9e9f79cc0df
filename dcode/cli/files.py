"""``dcode files list|info|delete|prune``: the remote files behind the Files image transport.

Each command works on one scope, the endpoint and key of ``--model`` (the configured model by
default): ``list`` shows the key's files, dcode's own marked with the variant they hold;
``info`` one file, by its id or by the variant id it holds; ``delete`` releases one (the remote
file and its mapping); ``prune`` releases the whole scope, every file dcode uploaded there and
every mapping. Files that other tools uploaded under the same key are listed, never deleted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from dcode.agent.tools.formatting import plural
from dcode.media.uploads.index import FileMapping, Scope, UploadIndex
from dcode.media.uploads.policy import DEFAULT_FILES_POLICY
from dcode.media.uploads.remote import RemoteFile, RemoteFiles
from dcode.settings.config import Settings

T = TypeVar("T")


def run_files(
    settings: Settings, action: Callable[[RemoteFiles, UploadIndex, Scope], Awaitable[T]]
) -> T:
    """Run ``action`` on the scope of ``settings``' model, with the HTTP client closed after."""
    from dcode.models.factory import model_http_client, resolve_model
    from dcode.models.files_api import OpenAIFiles

    endpoint = resolve_model(settings).endpoint

    async def go() -> T:
        http = model_http_client(settings)
        try:
            remote = OpenAIFiles.for_endpoint(endpoint, settings, http)
            return await action(
                remote, UploadIndex(settings.home), Scope.of(endpoint.base_url, endpoint.api_key)
            )
        finally:
            await http.aclose()

    return asyncio.run(go())


async def list_files(remote: RemoteFiles, index: UploadIndex, scope: Scope) -> str:
    held = {m.file_id: m for m in index.mappings(scope)}
    files = [f async for f in remote.list(order="asc")]
    now = time.time()
    lines = [f"Files of {scope}:"]
    for file in files:
        mapping = held.pop(file.id, None)
        owner = (
            f"variant {mapping.variant_id[:12]}"
            if mapping
            else ("dcode's, not indexed" if _owned(file) else "not dcode's")
        )
        lines.append(
            f"  {file.id}  {file.filename or '(no name)'}  {_size(file.bytes)}  {_expiry(file.expires_at, now)}  {owner}"
        )
    if not files:
        lines.append("  (none)")
    owned = sum(1 for f in files if _owned(f))
    lines.append(
        f"{plural(len(files), 'file')}, {owned} uploaded by dcode, {sum(f.bytes or 0 for f in files if _owned(f)):,} bytes of them"
    )
    if held:
        lines.append(
            f"{len(held)} mappings point at files the provider no longer lists; they are uploaded again when next needed"
        )
    return "\n".join(lines)


async def file_info(remote: RemoteFiles, index: UploadIndex, scope: Scope, ident: str) -> str:
    mapping = _mapping(index, scope, ident)
    file_id = mapping.file_id if mapping else ident
    file = await remote.retrieve(file_id)
    lines = [file_id]
    if file is None:
        lines.append("  remote     gone: the provider has no such file")
    else:
        lines += [
            f"  name       {file.filename or '(none)'}",
            f"  bytes      {_size(file.bytes)}",
            f"  created    {_when(file.created_at)}",
            f"  expires    {_expiry(file.expires_at, time.time())}",
            f"  purpose    {file.purpose or '(none)'}",
        ]
    lines.append(
        f"  variant    {mapping.variant_id}"
        if mapping
        else "  variant    none: no request image of dcode's refers to it"
    )
    return "\n".join(lines)


async def delete_file(remote: RemoteFiles, index: UploadIndex, scope: Scope, ident: str) -> str:
    mapping = _mapping(index, scope, ident)
    file_id = mapping.file_id if mapping else ident
    existed = await remote.delete(file_id)
    index.drop_files(scope, [file_id])
    held = f" (variant {mapping.variant_id[:12]})" if mapping else ""
    return (
        f"deleted {file_id}{held}"
        if existed
        else f"{file_id}{held} was already gone; its mapping is dropped"
    )


async def prune_files(remote: RemoteFiles, index: UploadIndex, scope: Scope) -> str:
    owned = [
        f.id async for f in remote.list(order="asc") if _owned(f)
    ]  # every page before deleting
    deleted = 0
    for file_id in owned:
        deleted += await remote.delete(file_id)
    dropped = index.drop_scope(scope)
    return f"released {scope}: {plural(deleted, 'file')} deleted, {plural(len(dropped), 'mapping')} dropped"


def _mapping(index: UploadIndex, scope: Scope, ident: str) -> FileMapping | None:
    """The mapping named by a file id or a variant id (or a prefix of one, at least 8 long)."""
    mappings = index.mappings(scope)
    exact = [m for m in mappings if ident in (m.file_id, m.variant_id)]
    if exact:
        return exact[0]
    prefixed = [m for m in mappings if len(ident) >= 8 and m.variant_id.startswith(ident)]
    return prefixed[0] if len(prefixed) == 1 else None


def _owned(file: RemoteFile) -> bool:
    return file.filename.startswith(DEFAULT_FILES_POLICY.name_prefix)


def _size(value: int | None) -> str:
    return "? bytes" if value is None else f"{value:,} bytes"


def _when(stamp: int | None) -> str:
    return "unknown" if not stamp else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stamp))


def _expiry(stamp: int | None, now: float) -> str:
    if not stamp:
        return "never expires"
    left = stamp - now
    if left <= 0:
        return "expired"
    return (
        f"expires in {left / 86400:.1f} d" if left >= 86400 else f"expires in {left / 3600:.1f} h"
    )
