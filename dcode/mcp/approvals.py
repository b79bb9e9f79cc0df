"""Which project ``.mcp.json`` files the user has approved: a project's file names programs to
start, so its servers start only once the user has seen them and said yes.

Recorded in ``$DCODE_HOME/approved_mcp.json`` (0600) by the file's resolved path and a digest
of its bytes, the way ``dcode.settings.trust`` records trusted projects; any edit changes the digest and
the file is asked about again. The digest covers the variables the file expands as well (which
of them it may read is the user's ``[mcp] project_env``): the approval shows them, so letting
the file read one more asks again. Standard library only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dcode.mcp.config import ConfigFile
from dcode.settings.trust import TrustState, TrustStore

RECORD_NAME = "approved_mcp.json"


def digest(file: ConfigFile) -> str:
    """Of the bytes, and of the names of the variables expanded (a file that expands none has
    the digest of its bytes alone)."""
    hasher = hashlib.sha256(file.data)
    expanded = sorted({name for server in file.runnable for name in server.variables})
    if expanded:
        hasher.update(b"\0variables\0" + "\0".join(expanded).encode())
    return "sha256:" + hasher.hexdigest()


def _store(home: Path) -> TrustStore:
    return TrustStore(home, RECORD_NAME)


def approval(home: Path, file: ConfigFile) -> TrustState:
    """TRUSTED when the file as read now was approved; CHANGED when an earlier content was;
    UNTRUSTED when it never was."""
    return _store(home).state_of(file.path, digest(file))


def approve(home: Path, file: ConfigFile) -> None:
    """Approve exactly the content that was read (and shown)."""
    _store(home).trust(file.path, digest(file))


def revoke(home: Path, path: Path) -> bool:
    return _store(home).revoke(path)
