"""Which attachment each sampled instant of a video became, so a re-read decodes nothing.

The frames themselves are attachments (content-addressed: a re-read that decodes again still
stores nothing new). This index only spares the decode. It maps, per video file and sampling
policy, each grid target (in milliseconds) to the frame that served it, ``[t, attachment id]``,
plus the first target known to lie past the end of the stream.

The key must be cheap (a 1 GiB file cannot be hashed on every read) and safe (a changed file
must never replay old frames). It is the sha256 of:
- the file's identity and version as the kernel reports them: device, inode, size, and the
  modification and status-change times in nanoseconds. Any write through the file system
  moves the status-change time, which no user-space call can set back, so an edited, replaced
  or re-encoded file gets a new key;
- the first and last 64 KiB of its bytes (~0.1 ms), which covers file systems whose times are
  coarse or unreliable (FAT's 2 s, some network mounts): a container's header and index live
  at the ends, so a different encode differs there;
- the policy: the grid interval, the frame size and JPEG quality, the decoder's version and
  the store's encoder policy, so frames made under other settings are never reused.
A copy or a restored backup gets a new key and is simply decoded once more.

Layout: ``<store root>/video-index/ab/<key>.json`` (0600, directories 0700). A damaged or
foreign index file reads as empty; writes are atomic, and concurrent writers merge what they
read first, so the worst race loses an entry, never corrupts one.
"""

# Any: the facts are JSON read from the cache file and from the sampling worker's pipe

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcode.media.attachment import is_attachment_id
from dcode.settings.private_files import write_private

SCHEMA = 1
EDGE_BYTES = 64 * 1024


def file_key(path: Path, info: os.stat_result, policy: dict[str, object]) -> str:
    digest = hashlib.sha256()
    identity = [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
    digest.update(json.dumps([identity, policy], sort_keys=True).encode())
    with path.open("rb") as handle:
        digest.update(handle.read(EDGE_BYTES))
        if info.st_size > EDGE_BYTES:
            handle.seek(max(EDGE_BYTES, info.st_size - EDGE_BYTES))
            digest.update(handle.read(EDGE_BYTES))
    return digest.hexdigest()


def target_key(target: float) -> str:
    return str(round(target * 1000))


@dataclass(frozen=True, slots=True)
class CachedFrame:
    t: float
    attachment_id: str


@dataclass(slots=True)
class FrameIndex:
    """The index of one (file, policy); ``save`` writes what was learnt since ``load``."""

    path: Path
    facts: dict[str, Any] | None = None
    frames: dict[str, CachedFrame] = field(default_factory=dict)
    end_ms: int | None = None
    dirty: bool = False

    @classmethod
    def load(cls, root: Path, key: str) -> FrameIndex:
        index = cls(root / "video-index" / key[:2] / f"{key}.json")
        index._merge(_read(index.path))
        index.dirty = False
        return index

    def lookup(self, target: float) -> CachedFrame | bool | None:
        """The frame for ``target``; False when the stream is known to end before it; None
        when unknown."""
        ms = round(target * 1000)
        if self.end_ms is not None and ms >= self.end_ms:
            return False
        return self.frames.get(str(ms))

    def record(self, target: float, t: float, attachment_id: str) -> None:
        self.frames[target_key(target)] = CachedFrame(t, attachment_id)
        self.dirty = True

    def record_end(self, target: float) -> None:
        ms = round(target * 1000)
        if self.end_ms is None or ms < self.end_ms:
            self.end_ms = ms
            self.dirty = True

    def record_facts(self, facts: dict[str, Any]) -> None:
        if facts != self.facts:
            self.facts = facts
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        self._merge(_read(self.path))  # keep what another reader learnt meanwhile
        payload = {
            "schema": SCHEMA,
            "facts": self.facts,
            "end_ms": self.end_ms,
            "frames": {k: [v.t, v.attachment_id] for k, v in self.frames.items()},
        }
        try:
            write_private(self.path, json.dumps(payload, separators=(",", ":")))
        except OSError:
            return  # the index only saves time; a read-only home must not fail the read
        self.dirty = False

    def _merge(self, data: dict[str, Any]) -> None:
        if data.get("schema") != SCHEMA:
            return
        facts = data.get("facts")
        if isinstance(facts, dict) and self.facts is None:
            self.facts = facts
        end = data.get("end_ms")
        if (
            isinstance(end, int)
            and not isinstance(end, bool)
            and (self.end_ms is None or end < self.end_ms)
        ):
            self.end_ms = end
        frames = data.get("frames")
        if not isinstance(frames, dict):
            return
        for key, value in frames.items():
            match value:
                case [int() | float() as t, str() as attachment_id] if is_attachment_id(
                    attachment_id
                ):
                    self.frames.setdefault(str(key), CachedFrame(float(t), attachment_id))
                case _:
                    continue


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
