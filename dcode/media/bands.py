"""Resampling a large image in horizontal bands on several cores at once.

Pillow releases the GIL while it resamples, so threads resizing separate bands of one image
run on separate cores. On the 2-core benchmark VM the 4K screenshot's shrink into the
normalized box (3840×2160 → 2730×1536, box filter) drops from ~58 ms in one piece to ~23-35 ms
in two bands (the VM's speed-up for two busy threads varies between 1.5× and 2×), and the 640k
variant's Lanczos from ~17 ms to ~10 ms. Three and four bands were measured no faster there,
so the layout stops at :data:`MAX_BANDS` = 2.

A band is Pillow's own ``resize`` with a source ``box`` in fractional pixels: output rows
``[y0, y1)`` are ``resize((width, y1 - y0), box=(0, y0·sh/h, sw, y1·sh/h))``, the same filter
over the same footprint, reading source rows beyond the box for the filter's support just as
a one-piece resize does. It is not always bit-identical to a one-piece resize: Pillow picks
the order of its two passes (and so where it rounds to 8 bits) from the box's cost, and takes
box coordinates as C floats, which can move a tap that sits exactly on a tie. Measured over 44
sizes of noise, 0.14 % of box-filter and 0.01 % of Lanczos samples differ (Lanczos by 1 level;
a box tap moved at a tie can change one row of pure noise a lot); on screenshots and photos
the banded output is within 64 dB PSNR (box) and 88 dB (Lanczos) of the one-piece one, far
beyond what the JPEG encoding after it preserves (~38-40 dB).

Determinism: the band layout depends on the output size alone (never on the number of cores,
the load or timing), so the same pixels always give the same bytes, which content addressing
and variant ids rely on. The layout is part of the encoder code: changing it changes output,
so it bumps ``encode.POLICY_VERSION``.

Work distribution: the caller computes the first band itself and hands the others to a small
shared helper pool (one thread fewer than the cores, at most three). Helpers only ever run
leaf work, and the caller takes back any band no helper has started, so several transforms
at once (the transform pool runs two) share the helpers without waiting on each other and
without any risk of deadlock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from PIL import Image

T = TypeVar("T")

MIN_BAND_PIXELS = 1 << 17
"""Outputs smaller than this (~362×362) are resized in one piece: thread hand-off would cost
more than it saves."""
MAX_BANDS = 2
MIN_BAND_ROWS = 16
MAX_HELPERS = 3

_BANDED_MODES = frozenset({"RGB", "RGBA", "L", "LA"})
_PREMULTIPLIED = {"RGBA": "RGBa", "LA": "La"}

_helpers: ThreadPoolExecutor | None = None
_single_core = False
_helpers_lock = threading.Lock()


def band_count(width: int, height: int) -> int:
    """How many bands an output of ``width``×``height`` is resampled in (1 = one piece).

    A function of the output size only: one piece below :data:`MIN_BAND_PIXELS`, otherwise
    one band per :data:`MIN_BAND_PIXELS` up to :data:`MAX_BANDS`, none thinner than
    :data:`MIN_BAND_ROWS` rows.
    """
    pixels = width * height
    if pixels < MIN_BAND_PIXELS:
        return 1
    return max(1, min(MAX_BANDS, pixels // MIN_BAND_PIXELS, height // MIN_BAND_ROWS))


def resize_banded(
    im: Image.Image, size: tuple[int, int], resample: Image.Resampling
) -> Image.Image:
    """``im.resize(size, resample)``, computed in :func:`band_count` bands in parallel.

    8-bit grey and RGB(A) images only are banded; other modes (and nearest-neighbour, which
    Pillow implements differently) are resized in one piece.
    """
    width, height = size
    bands = band_count(width, height)
    if bands == 1 or im.mode not in _BANDED_MODES or resample == Image.Resampling.NEAREST:
        return im.resize(size, resample)
    # Pillow premultiplies alpha inside each resize call; do it once for the whole image.
    premultiplied = _PREMULTIPLIED.get(im.mode)
    source = im.convert(premultiplied) if premultiplied else im
    cuts = [height * i // bands for i in range(bands + 1)]
    # Left uninitialised: every row is written by exactly one band's paste.
    out = Image.new(source.mode, size, None)
    run_parallel(
        [partial(_band, source, out, cuts[i], cuts[i + 1], resample) for i in range(bands)]
    )
    return out.convert(im.mode) if premultiplied else out


def _band(
    source: Image.Image, out: Image.Image, y0: int, y1: int, resample: Image.Resampling
) -> None:
    """Resample output rows ``[y0, y1)`` and paste them into ``out`` (each band its own rows,
    so the threads never write the same memory)."""
    (src_w, src_h), (width, height) = source.size, out.size
    box = (0.0, y0 * src_h / height, float(src_w), y1 * src_h / height)
    out.paste(source.resize((width, y1 - y0), resample, box=box), (0, y0))


def run_parallel(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``tasks`` (CPU work that releases the GIL) on the caller and the helper threads;
    results in order.

    The caller runs the first task, then takes back every task no helper has started (from
    the end of the queue, since helpers take from its front) and only then waits for the
    ones in progress. The first exception is raised after every task has finished or been
    taken back, so no helper is left working for a caller that has gone.
    """
    pool = _helper_pool()
    if pool is None or len(tasks) < 2:
        return [task() for task in tasks]
    futures: dict[int, Future[T]] = {i: pool.submit(tasks[i]) for i in range(1, len(tasks))}
    results: dict[int, T] = {}
    errors: list[BaseException] = []

    def attempt(index: int, work: Callable[[], T]) -> None:
        try:
            results[index] = work()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others
            errors.append(exc)

    attempt(0, tasks[0])
    for index in sorted(futures, reverse=True):
        if futures[index].cancel():
            del futures[index]
            if not errors:
                attempt(index, tasks[index])
    for index, future in futures.items():
        attempt(index, future.result)
    if errors:
        raise errors[0]
    return [results[i] for i in range(len(tasks))]


def _helper_pool() -> ThreadPoolExecutor | None:
    """The shared helper threads, created on first use; None on a single core."""
    global _helpers, _single_core
    if _helpers is not None or _single_core:
        return _helpers
    with _helpers_lock:
        if _helpers is None and not _single_core:
            count = min(MAX_HELPERS, _cores() - 1)
            if count < 1:
                _single_core = True
            else:
                _helpers = ThreadPoolExecutor(max_workers=count, thread_name_prefix="dcode-band")
    return _helpers


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1
