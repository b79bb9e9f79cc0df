"""Letting Pillow reuse image memory while dcode is processing images, and no longer.

Pillow allocates image rows in blocks and, by default, frees every block as soon as its image
dies. The C allocator returns such large chunks to the kernel, so a later image pays a page
fault for every 4 KiB it touches again. Measured on the 2-core benchmark VM: up to ~10,000
faults per 4K screenshot through admission and a request variant (about 1,000 with the cache),
~10 ms off the pipeline's median and ~25 ms off a bare Pillow decode + resize + encode of the
same image; how much is lost without it depends on the allocator's state, which also made
timings swing from run to run.

Inside :func:`reusable_memory` Pillow keeps up to :data:`CACHE_BLOCKS` freed blocks of
:data:`CACHE_BLOCK_SIZE` for the next image (1 MiB blocks come back at nearly the same size
for any row length, so reuse rarely reallocates). :data:`IDLE_SECONDS` after the last image
operation ends, the blocks are freed and Pillow's own settings come back, so an idle dcode
holds no extra memory. The peak is unchanged: the cache only holds memory the pipeline had
just used (a 4K screenshot plus its variant leaves 88 blocks), and never more than 128 MiB.

These are process-wide Pillow settings. They are left alone when the process configured
Pillow's allocator itself (``PILLOW_BLOCK_SIZE``/``PILLOW_BLOCKS_MAX`` set, or a block cache
already enabled).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from PIL import Image

CACHE_BLOCK_SIZE = 1 << 20
CACHE_BLOCKS = 128
"""At most 128 MiB kept."""
IDLE_SECONDS = 30.0
_ENVIRONMENT = ("PILLOW_BLOCK_SIZE", "PILLOW_BLOCKS_MAX")

_lock = threading.Lock()
_active = 0
_idle_since = 0.0
_timer: threading.Timer | None = None
_saved: tuple[int, int] | None = None
"""Pillow's (block size, blocks max) before this module changed them; None when unchanged."""


@contextmanager
def reusable_memory() -> Iterator[None]:
    """Keep Pillow's freed blocks for reuse while the block runs (re-entrant, thread-safe)."""
    _enter()
    try:
        yield
    finally:
        _leave()


def release() -> None:
    """Free the kept blocks and restore Pillow's settings now, unless images are in flight."""
    with _lock:
        _release_locked()


def is_caching() -> bool:
    """Whether this module currently has Pillow keeping freed blocks."""
    with _lock:
        return _saved is not None


def _enter() -> None:
    global _active, _saved
    with _lock:
        _active += 1
        if _saved is None and _configurable():
            _saved = (Image.core.get_block_size(), Image.core.get_blocks_max())
            Image.core.set_block_size(CACHE_BLOCK_SIZE)
            Image.core.set_blocks_max(CACHE_BLOCKS)


def _leave() -> None:
    global _active, _idle_since
    with _lock:
        _active -= 1
        if _active == 0 and _saved is not None:
            _idle_since = time.monotonic()
            if _timer is None:  # one timer for a whole burst of images, not one per image
                _arm(IDLE_SECONDS)


def _arm(delay: float) -> None:
    global _timer
    _timer = threading.Timer(delay, _on_timer)
    _timer.daemon = True
    _timer.start()


def _on_timer() -> None:
    global _timer
    with _lock:
        _timer = None
        if _saved is None:
            return
        remaining = _idle_since + IDLE_SECONDS - time.monotonic()
        if _active or remaining > 0:
            _arm(max(remaining, 0.0) if not _active else IDLE_SECONDS)
            return
        _release_locked()


def _release_locked() -> None:
    global _saved, _timer
    if _active or _saved is None:
        return
    block_size, blocks_max = _saved
    Image.core.set_blocks_max(blocks_max)  # frees what the cache holds
    Image.core.set_block_size(block_size)
    _saved = None
    if _timer is not None:
        _timer.cancel()
        _timer = None


def _configurable() -> bool:
    if any(os.environ.get(name) for name in _ENVIRONMENT):
        return False
    return Image.core.get_blocks_max() == 0
