"""Which project ``.mcp.json`` files the user has approved: a project's file names programs to
start, so its servers start only once the user has seen them and said yes.

Recorded in ``$DCODE_HOME/approved_mcp.json`` (0600) by the file's resolved path and a digest
of its bytes, the way ``dcode.trust`` records trusted projects; any edit changes the digest and
the file is asked about again. Standard library only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dcode.mcp.config import ConfigFile
from dcode.trust import TrustState, TrustStore

RECORD_NAME = "approved_mcp.json"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _store(home: Path) -> TrustStore:
    return TrustStore(home, RECORD_NAME)


def approval(home: Path, file: ConfigFile) -> TrustState:
    """TRUSTED when the file as read now was approved; CHANGED when an earlier content was;
    UNTRUSTED when it never was."""
    return _store(home).state_of(file.path, digest(file.data))


def approve(home: Path, file: ConfigFile) -> None:
    """Approve exactly the content that was read (and shown)."""
    _store(home).trust(file.path, digest(file.data))


def revoke(home: Path, path: Path) -> bool:
    return _store(home).revoke(path)
