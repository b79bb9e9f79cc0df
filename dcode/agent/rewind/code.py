"""Putting files back as they were before a turn.

For each file dcode's file tools changed from that turn on, the first change says what it held
before (or that there was no file: a rewind then deletes it) and the last one what dcode left
there. A file whose content is no longer what dcode left was changed by something else since
(you, a shell command, a formatter): it is put back all the same, but what it holds now is
copied first to ``file-history/rewound/…`` under ``$DCODE_HOME``, and the report names the copy.
A file already as it was is left alone. Nothing is lost: the worst case is a file to copy back.
The contents are kept under the ``$DCODE_HOME`` of the machine that made the change: a session
in a shared store, rewound on another machine, names each file whose content that machine lacks
and leaves it as it is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dcode.agent.backends.atomic import write_atomic
from dcode.agent.rewind.blobs import current_hash
from dcode.agent.store.base import SessionStore, Turn
from dcode.settings.private_files import write_private

REWOUND_DIR = "rewound"
NOT_HERE = (
    "its earlier content is not kept on this machine (it is in the file-history of the "
    "$DCODE_HOME where the change was made)"
)


@dataclass(frozen=True, slots=True)
class FileRestore:
    path: Path
    before_sha: str | None
    """What the file held before the turn; None: there was no file."""
    kept: bool
    """False when that content was too large to keep: the file cannot be put back."""
    changed_outside: bool
    """What the file holds now is not what dcode left there."""
    change_ids: tuple[int, ...]

    @property
    def action(self) -> str:
        if not self.kept:
            return "not kept"
        return "delete" if self.before_sha is None else "restore"


@dataclass(frozen=True, slots=True)
class CodePlan:
    files: tuple[FileRestore, ...]
    unchanged: tuple[int, ...] = ()
    """Changes whose file is already as it was before the turn: nothing to do but forget them."""


@dataclass(slots=True)
class CodeReport:
    restored: list[Path] = field(default_factory=list)
    deleted: list[Path] = field(default_factory=list)
    copies: dict[Path, Path] = field(default_factory=dict)
    """A file changed since by something else → where what it held is kept now."""
    failed: dict[Path, str] = field(default_factory=dict)


def plan_code(store: SessionStore, turn: Turn) -> CodePlan:
    """What putting the files back to before ``turn`` would do (reads the files; blocking)."""
    first: dict[Path, list] = {}
    for change in store.changes_since(turn.session_id, turn.change_mark):
        first.setdefault(change.path, []).append(change)
    files: list[FileRestore] = []
    unchanged: list[int] = []
    for path, changes in first.items():
        now = current_hash(path)
        ids = tuple(c.id for c in changes)
        if now == changes[0].before_sha:
            unchanged.extend(ids)
            continue
        last = changes[-1]
        files.append(
            FileRestore(
                path,
                changes[0].before_sha,
                changes[0].kept,
                last.after_sha is None or now != last.after_sha,
                ids,
            )
        )
    return CodePlan(tuple(sorted(files, key=lambda f: str(f.path))), tuple(unchanged))


def restore_code(
    store: SessionStore, plan: CodePlan, *, session_id: str, shown: Callable[[Path], str] = str
) -> CodeReport:
    """Carry out ``plan``; a file that cannot be put back is reported, the others still are.
    The changes of every file put back are forgotten (a later rewind starts from the files as
    they are then)."""
    report = CodeReport()
    done: list[int] = list(plan.unchanged)
    copies_dir = store.blobs.root / REWOUND_DIR / f"{session_id}-{time.strftime('%Y%m%d-%H%M%S')}"
    for file in plan.files:
        if not file.kept:
            report.failed[file.path] = "its earlier content was too large to keep"
            continue
        if file.before_sha is not None and not store.blobs.has(file.before_sha):
            report.failed[file.path] = NOT_HERE
            continue
        if _through_a_link(file.path):
            report.failed[file.path] = (
                "it is now reached through a symbolic link, so it was left alone"
            )
            continue
        try:
            if file.changed_outside and file.path.is_file():
                copy = copies_dir / _relative(shown(file.path))
                write_private(copy, file.path.read_bytes())
                report.copies[file.path] = copy
            if file.before_sha is None:
                if file.path.is_file() or file.path.is_symlink():
                    os.unlink(file.path)
                report.deleted.append(file.path)
            else:
                write_atomic(file.path, store.blobs.get(file.before_sha))
                report.restored.append(file.path)
        except OSError as exc:
            report.failed[file.path] = exc.strerror or str(exc)
            continue
        done.extend(file.change_ids)
    store.drop_changes(done)
    return report


def _through_a_link(path: Path) -> bool:
    """Whether ``path`` (resolved when it was recorded) now leads through a symbolic link: a
    folder replaced by a link since would send the write, or the deletion, somewhere else."""
    return os.path.realpath(path) != str(path)


def _relative(shown: str) -> Path:
    """A path as shown (``src/a.py``, ``../b.txt``, ``/etc/x``) as one under the copies' folder."""
    parts = [
        part if part not in ("..", ".") else "_"
        for part in Path(shown).parts
        if part not in ("/", "")
    ]
    return Path(*parts) if parts else Path("_")
