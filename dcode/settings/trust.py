"""Which projects the user has trusted to widen what dcode may do in them.

A repository is untrusted input: a cloned project's ``.dcode/config.toml`` must not raise the
approval mode, or change where requests and keys go, or what the shell sees, on its own. Those
settings apply once the user has trusted the project, and the trust is recorded here, in
``$DCODE_HOME/trusted_projects.json`` (0600), keyed by the project's resolved path and a digest
of its trust-relevant files. object edit to those files changes the digest, and the project is
asked about again.

``TRUST_FILES`` is the one list of what the digest covers; a file or a directory named there
joins the digest by being added to it (the agent definitions are). A project's ``.mcp.json``
has a record of its own, kept by this same store (``dcode.mcp.approvals``): approving its
servers and trusting the project's settings are separate questions. A
directory counts only with what lies inside the project: a symlink out of it (``.claude/agents``
pointing at ``/``) adds nothing, so a hostile repository cannot make dcode read the disk. What an
untrusted project may still set is ``project_gate``'s business, not this module's.

Standard library only: ``load_settings`` reads the record before anything heavy is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from dcode.regular_files import CONFIG_BYTES, read_regular
from dcode.settings.private_files import one_writer, write_private

AGENT_DIRS: tuple[str, ...] = (".dcode/agents", ".claude/agents")  # lowest priority first
CLAUDE_SETTINGS: tuple[str, ...] = (".claude/settings.json", ".claude/settings.local.json")
"""Claude Code's project settings: their allow rules wait for trust (``agent.permissions``)."""
TRUST_FILES: tuple[str, ...] = (".dcode/config.toml", *CLAUDE_SETTINGS, *AGENT_DIRS)
RECORD_NAME = "trusted_projects.json"
_LOCK_NAME = "trusted_projects.lock"
_FORMAT = 1


class TrustState(StrEnum):
    NONE = "none"  # the project has none of the trust files: there is nothing to trust
    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"  # never trusted (or revoked)
    CHANGED = "changed"  # trusted once; the files have changed since


@dataclass(frozen=True, slots=True)
class ProjectFiles:
    """The trust files of one project as read now, and the digest the record keeps."""

    root: Path
    contents: dict[str, bytes]  # relative POSIX path -> bytes, for the files that exist

    @classmethod
    def read(cls, root: Path) -> ProjectFiles:
        """Read every trust file under ``root``; raises OSError when one exists but cannot be read."""
        root = root.resolve()
        contents: dict[str, bytes] = {}
        for name in TRUST_FILES:
            for path in _files_of(root / name, root):
                # Past the limit a file is refused by its reader (the config) or skipped (an agent
                # has a smaller cap), so its head is all the digest needs: never gigabytes in memory.
                contents[path.relative_to(root).as_posix()] = read_regular(path, CONFIG_BYTES + 1)
        return cls(root, contents)

    @property
    def digest(self) -> str:
        hasher = hashlib.sha256()
        for name in sorted(self.contents):
            data = self.contents[name]
            hasher.update(f"{name}\0{len(data)}\0".encode())
            hasher.update(data)
        return "sha256:" + hasher.hexdigest()


def _files_of(path: Path, root: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
    elif path.is_dir() and _inside(path, root):
        yield from sorted(p for p in path.rglob("*") if p.is_file() and _inside(p, root))


def _inside(path: Path, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(root)  # realpath: a symlink loop is no error


def project_trust(home: Path, workspace: Path) -> TrustState:
    """The trust ``workspace`` has now, for what its trust files hold now; a file that exists
    but cannot be read leaves it untrusted (the safe side)."""
    try:
        files = ProjectFiles.read(workspace)
    except OSError:
        return TrustState.UNTRUSTED
    return TrustStore(home).state(files)


@dataclass(frozen=True, slots=True)
class TrustEntry:
    path: str
    digest: str
    trusted_at: float


class TrustStore:
    """The trust record. A record that cannot be read trusts nothing (and says nothing):
    dcode then asks, which is the safe side; trusting again rewrites it."""

    def __init__(self, home: Path, record: str = RECORD_NAME) -> None:
        """``record``: the file under ``home`` (another record keyed the same way: the approved
        ``.mcp.json`` files, ``dcode.mcp.approvals``)."""
        self.home = home
        self.path = home / record

    def entries(self) -> dict[str, TrustEntry]:
        try:
            data: object = json.loads(self.path.read_text(encoding="utf-8"))
            projects = data.get("projects") if isinstance(data, dict) else None
            if not isinstance(projects, dict):
                return {}
            return {
                path: TrustEntry(path, str(item["digest"]), float(item.get("trusted_at", 0)))
                for path, item in projects.items()
                if isinstance(item, dict) and isinstance(item.get("digest"), str)
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    def state(self, files: ProjectFiles) -> TrustState:
        if not files.contents:
            return TrustState.NONE
        return self.state_of(files.root, files.digest)

    def state_of(self, path: Path, digest: str) -> TrustState:
        """Whether ``path`` (resolved) is recorded with ``digest``, with another one, or not at all."""
        entry = self.entries().get(str(path.resolve()))
        if entry is None:
            return TrustState.UNTRUSTED
        return TrustState.TRUSTED if entry.digest == digest else TrustState.CHANGED

    def trust(self, root: Path, digest: str) -> None:
        """Trust ``root`` as long as its trust files have ``digest`` (the content the user saw)."""
        with self._locked():
            entries = self.entries()
            key = str(root.resolve())
            entries[key] = TrustEntry(key, digest, time.time())
            self._write(entries)

    def revoke(self, root: Path) -> bool:
        """Forget ``root``; False when it was not trusted."""
        with self._locked():
            entries = self.entries()
            if entries.pop(str(root.resolve()), None) is None:
                return False
            self._write(entries)
            return True

    def _write(self, entries: dict[str, TrustEntry]) -> None:
        data = {
            "version": _FORMAT,
            "projects": {
                e.path: {"digest": e.digest, "trusted_at": e.trusted_at}
                for e in sorted(entries.values(), key=lambda e: e.path)
            },
        }
        write_private(self.path, json.dumps(data, indent=2) + "\n")

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        """One writer at a time, so that a revoke racing another project's trust is not lost."""
        return one_writer(self.home / _LOCK_NAME)
