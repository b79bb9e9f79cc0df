"""Crash-safe file writes for the content-addressed stores.

A reader must never see half a file under a final name: bytes go to a unique temporary file
in the destination directory (same filesystem) and are moved into place with ``os.replace``,
which is atomic on POSIX and Windows. Concurrent writers of the same content race harmlessly:
the last rename wins and both wrote identical bytes. No fsync: every reader re-verifies what
it reads (digest or header), so a file lost to a power cut is regenerated or refused, never
trusted.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds either the old or the new bytes.

    ``mode`` is applied before the rename; stored objects use 0o444 so that nothing (the
    agent's own write tools included) edits an attachment in place by accident.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if hasattr(os, "fchmod"):  # POSIX; Windows keeps its default ACL
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
