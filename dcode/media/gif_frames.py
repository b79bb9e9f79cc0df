"""Walk a GIF's block structure to learn every frame's declared extents, without decoding.

Only the first frame of a GIF is admitted, but a later frame can declare a 65535² canvas
(``decompression_bomb_extents.gif``): Pillow grows the image to the union of frame extents
and would try to allocate it the moment anything seeks past frame 0. A file like that is
hostile or broken, so admission refuses it up front. The walk skips LZW data sub-block by
sub-block (at most 255 bytes each) and never decompresses anything.
"""

from __future__ import annotations

from collections.abc import Iterator

_EXTENSION = 0x21
_IMAGE = 0x2C
_TRAILER = 0x3B


def frame_extents(data: bytes) -> Iterator[tuple[int, int]]:
    """Yield ``(right, bottom)`` of each frame (left/top offset plus size); stops quietly at
    the first structural problem (the decoder reports corruption in its own words)."""
    if len(data) < 13 or data[:3] != b"GIF":
        return
    pos = 13 + _colour_table_size(data[10])
    while pos < len(data):
        block = data[pos]
        if block == _TRAILER:
            return
        if block == _EXTENSION:
            pos = _skip_sub_blocks(data, pos + 2)
        elif block == _IMAGE:
            if pos + 10 > len(data):
                return
            left = int.from_bytes(data[pos + 1 : pos + 3], "little")
            top = int.from_bytes(data[pos + 3 : pos + 5], "little")
            width = int.from_bytes(data[pos + 5 : pos + 7], "little")
            height = int.from_bytes(data[pos + 7 : pos + 9], "little")
            yield left + width, top + height
            pos += 10 + _colour_table_size(data[pos + 9]) + 1  # +1: LZW minimum code size
            pos = _skip_sub_blocks(data, pos)
        else:
            return
        if pos < 0:
            return


def _colour_table_size(packed: int) -> int:
    return 3 * (2 ** ((packed & 0x07) + 1)) if packed & 0x80 else 0


def _skip_sub_blocks(data: bytes, pos: int) -> int:
    """Position after a chain of length-prefixed sub-blocks, or -1 if it runs off the end."""
    while pos < len(data):
        size = data[pos]
        pos += 1 + size
        if size == 0:
            return pos
    return -1
