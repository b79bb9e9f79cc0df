"""What a file held before dcode changed it, stored once by content: ``$DCODE_HOME/file-history``.

A blob is named by the SHA-256 of its bytes (``objects/ab/abcd…``), private (0400 in 0700
directories), and written atomically, so two processes keeping the same content race harmlessly
and a reader never sees half a file. Content over ``MAX_BLOB_BYTES`` is not kept: a rewind then
says that file cannot be put back, rather than filling the disk with copies of a data file.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Collection
from pathlib import Path

from dcode.regular_files import NotRegularFile, open_regular
from dcode.settings.private_files import READ_ONLY_FILE, write_private

FILE_HISTORY_DIR = "file-history"
MAX_BLOB_BYTES = 32 * 1024 * 1024
GRACE_SECONDS = 3600.0


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def current_hash(path: Path) -> str | None:
    """The hash of what ``path`` holds now; None when there is no file there (a named pipe or
    a device is no file, and reading one could block for ever)."""
    digest = hashlib.sha256()
    try:
        with open_regular(path) as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, NotRegularFile):
        return None
    return digest.hexdigest()


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.objects = root / "objects"

    def path_for(self, sha: str) -> Path:
        return self.objects / sha[:2] / sha

    def put(self, data: bytes) -> str:
        """Keep ``data``; returns its hash (the same content is stored once)."""
        sha = content_hash(data)
        target = self.path_for(sha)
        if not target.exists():
            write_private(target, data, mode=READ_ONLY_FILE)
        return sha

    def get(self, sha: str) -> bytes:
        return self.path_for(sha).read_bytes()

    def has(self, sha: str) -> bool:
        """Whether this machine keeps ``sha``: a session in a shared store may have been
        changed from another machine, whose ``$DCODE_HOME`` keeps its contents."""
        return self.path_for(sha).is_file()

    def keep_only(self, wanted: Collection[str], *, settled_for: float = GRACE_SECONDS) -> int:
        """Delete every blob not in ``wanted`` that is older than ``settled_for`` seconds (a
        younger one may belong to a change another process is still recording); returns how
        many went."""
        if not self.objects.is_dir():
            return 0
        gone, cutoff = 0, time.time() - settled_for
        for shard in self.objects.iterdir():
            if not shard.is_dir():
                continue
            for blob in shard.iterdir():
                if blob.name in wanted:
                    continue
                try:
                    if blob.stat().st_mtime <= cutoff:
                        os.unlink(blob)
                        gone += 1
                except FileNotFoundError:
                    continue
        return gone
