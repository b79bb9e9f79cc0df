"""Prompt history: a JSONL file of sent prompts, and a shell-like cursor to walk it.

Each line is ``{"text": ..., "ts": ..., "cwd": ...}``; an optional ``"draft"`` keeps pasted
blocks collapsed when the prompt is recalled. Loading reads the file once (call ``load`` from a
thread; appends made meanwhile are kept), skips lines that do not parse and keeps the newest
``limit`` entries. Appending writes one short line, so it is done inline. When the file holds
more than three times ``limit`` lines, ``load`` rewrites it with the newest entries (skipped if
another instance appended meanwhile).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from dcode.settings.private_files import open_private, write_private

DEFAULT_LIMIT = 1000
MAX_ENTRY_CHARS = 100_000  # bigger prompts are recalled in this session but not written


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    text: str
    ts: float = 0.0
    cwd: str = ""
    draft: dict[str, object] | None = None

    def to_json(self) -> str:
        record: dict[str, object] = {"text": self.text, "ts": self.ts, "cwd": self.cwd}
        if self.draft is not None:
            record["draft"] = self.draft
        return json.dumps(record, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> HistoryEntry | None:
        try:
            raw = json.loads(line)
        except ValueError:
            return None
        if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
            return None
        ts = raw.get("ts")
        cwd = raw.get("cwd")
        draft = raw.get("draft")
        return cls(
            text=raw["text"],
            ts=float(ts) if isinstance(ts, int | float) else 0.0,
            cwd=cwd if isinstance(cwd, str) else "",
            draft=draft if isinstance(draft, dict) else None,
        )


class PromptHistory:
    """The entries, oldest first, plus a navigation cursor counted back from the newest."""

    def __init__(self, path: Path, *, cwd: Path | str | None = None, limit: int = DEFAULT_LIMIT):
        self.path = path
        self.cwd = str(cwd) if cwd is not None else ""
        self.limit = limit
        self._lock = threading.Lock()
        self._entries: list[HistoryEntry] = []
        self._loaded = False
        self._position = 0  # 0: on the draft; n: the n-th newest entry

    # --- storage

    @property
    def loaded(self) -> bool:
        return self._loaded

    @property
    def entries(self) -> list[HistoryEntry]:
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def load(self) -> list[HistoryEntry]:
        """Read the file (blocking: run it in a thread). Entries appended before it ends stay."""
        loaded: list[HistoryEntry] = []
        lines = 0
        size = 0
        try:
            with self.path.open(encoding="utf-8", errors="replace") as handle:
                size = os.fstat(handle.fileno()).st_size
                for line in handle:
                    lines += 1
                    if not line.strip():
                        continue
                    entry = HistoryEntry.from_json(line)
                    if entry is None or not entry.text.strip():
                        continue
                    if loaded and loaded[-1].text == entry.text:
                        continue
                    loaded.append(entry)
                    if len(loaded) > 2 * self.limit:
                        del loaded[: -self.limit]
        except OSError:
            pass  # missing or unreadable: start empty
        loaded = loaded[-self.limit :]
        if lines > 3 * self.limit:
            self._compact(loaded, size)
        with self._lock:
            # Prompts sent while this ran may already be in the file: keep one copy.
            recent = loaded[-len(self._entries) :] if self._entries else []
            on_disk = {(entry.ts, entry.text) for entry in recent}
            session = [entry for entry in self._entries if (entry.ts, entry.text) not in on_disk]
            self._entries = (loaded + session)[-self.limit :]
            self._loaded = True
            return list(self._entries)

    def _compact(self, entries: list[HistoryEntry], size: int) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            write_private(temporary, "".join(entry.to_json() + "\n" for entry in entries))
            if self.path.stat().st_size == size:
                os.replace(temporary, self.path)
        except OSError:
            pass
        finally:
            temporary.unlink(missing_ok=True)

    def append(self, text: str, *, draft: dict[str, object] | None = None) -> bool:
        """Record a sent prompt; False when it is blank or repeats the newest entry."""
        self.reset()
        if not text.strip():
            return False
        with self._lock:
            if self._entries and self._entries[-1].text == text:
                return False
            entry = HistoryEntry(text=text, ts=time.time(), cwd=self.cwd, draft=draft)
            self._entries.append(entry)
            if len(self._entries) > self.limit:
                del self._entries[: -self.limit]
        if len(text) > MAX_ENTRY_CHARS:
            return True
        try:
            with open_private(self.path, "a") as handle:
                handle.write(entry.to_json() + "\n")
        except OSError:
            pass  # history is a convenience; a read-only home must not break sending
        return True

    # --- navigation

    @property
    def navigating(self) -> bool:
        return self._position > 0

    def previous(self) -> HistoryEntry | None:
        """One step older, or None when already at the oldest (or there is no history)."""
        with self._lock:
            if self._position >= len(self._entries):
                return None
            self._position += 1
            return self._entries[-self._position]

    def next(self) -> HistoryEntry | None:
        """One step newer; None when the step lands back on the draft (or was not navigating)."""
        with self._lock:
            if self._position <= 1:
                self._position = 0
                return None
            self._position -= 1
            return self._entries[-self._position]

    def reset(self) -> None:
        self._position = 0
