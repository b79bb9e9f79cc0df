"""Opt-in wall-clock timings of the pipeline's stages, for the benchmark and for profiling.

Normalization and variant derivation mark their stages with ``with stage("decode"):``. Nothing
is recorded unless a caller asked for it on its own thread (or task) with :func:`recording`;
otherwise a stage costs one context-variable read. Timings are wall clock on the thread that
runs the stage, so work a stage hands to helper threads (``bands``) is inside its figure.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_SINK: ContextVar[dict[str, float] | None] = ContextVar("dcode_media_stages", default=None)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block into the active recording, adding to ``name`` if it repeats."""
    sink = _SINK.get()
    if sink is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        sink[name] = sink.get(name, 0.0) + (time.perf_counter() - started) * 1000


@contextmanager
def recording() -> Iterator[dict[str, float]]:
    """Collect the milliseconds of every stage run on this thread inside the block."""
    sink: dict[str, float] = {}
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)
