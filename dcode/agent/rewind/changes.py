"""Where a run records the files it writes, for ``/rewind`` to put them back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dcode.agent.store.base import SessionStore


@dataclass(frozen=True, slots=True)
class ChangeLog:
    """The session's part of the store (a subagent's runs record into their parent session's)."""

    store: SessionStore
    session_id: str

    def before(self, path: Path) -> int:
        return self.store.record_before(self.session_id, path)

    def after(self, change_id: int, path: Path) -> None:
        self.store.record_after(change_id, path)
