"""A PNG's chunks checked one by one, for the files Pillow will not open.

Pillow refuses a whole PNG when any chunk's checksum is wrong, even an optional one (a colour
profile, a text note) that says nothing about the pixels. The chunks whose type starts with a
lower-case letter are such optional (ancillary) ones: a PNG is still whole without them. So
dcode drops the ones whose checksum is wrong and opens the rest; a wrong checksum in a chunk
the picture needs, or a file cut short, is named exactly.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True, slots=True)
class PngRepair:
    data: bytes | None
    """The PNG without its broken optional chunks; None when it cannot be repaired."""
    problem: str
    """What was wrong, for the user: which chunk, where."""


def _kind(chunk: bytes) -> str:
    return chunk.decode("latin-1", "replace")


def without_broken_chunks(data: bytes) -> PngRepair | None:
    """The repair of a PNG whose chunks are damaged; None when every chunk is sound (the
    trouble lies elsewhere)."""
    if not data.startswith(SIGNATURE):
        return None
    kept = [SIGNATURE]
    dropped: list[str] = []
    pos = len(SIGNATURE)
    while pos < len(data):
        if pos + 12 > len(data):
            return PngRepair(
                None, f"the file is cut short at byte {pos:,}, inside a chunk's header"
            )
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            return PngRepair(
                None,
                f"its {_kind(kind)} chunk at byte {pos:,} is cut short ({length:,} bytes declared, {len(data) - pos - 12:,} present)",
            )
        (stored,) = struct.unpack(">I", data[end - 4 : end])
        if zlib.crc32(data[pos + 4 : end - 4]) & 0xFFFFFFFF != stored:
            if not kind[:1].islower():  # a critical chunk: the picture needs it
                return PngRepair(
                    None, f"the checksum of its {_kind(kind)} chunk (at byte {pos:,}) is wrong"
                )
            dropped.append(_kind(kind))
        else:
            kept.append(data[pos:end])
        pos = end
        if kind == b"IEND":
            break
    if not dropped:
        return None
    return PngRepair(
        b"".join(kept),
        f"the checksum of its optional {', '.join(dropped)} chunk{'s' if len(dropped) > 1 else ''} is wrong",
    )
