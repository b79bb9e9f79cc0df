"""The bounded pool that runs image transforms off the event loop.

Threads, not processes: Pillow releases the GIL while it decodes, resamples and encodes, so
threads overlap the real work without pickling megabytes between processes, and they start
instantly (fast start matters more than the last few percent). The bound (1–8, default 2)
caps both CPU and peak memory: each in-flight transform of a large image holds tens of MB.
Inside one transform, a large resize is split into bands that the calling worker shares with
the small helper pool of ``bands`` (one thread fewer than the cores), so a single transform
also uses a second core; the bound on transforms is unchanged.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

MIN_WORKERS = 1
MAX_WORKERS = 8
DEFAULT_WORKERS = 2


class TransformPool:
    """A fixed-size worker pool for image transforms; validate the bound at construction."""

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise TypeError(f"workers must be an int, got {type(workers).__name__}")
        if not MIN_WORKERS <= workers <= MAX_WORKERS:
            raise ValueError(f"workers must be {MIN_WORKERS}..{MAX_WORKERS}, got {workers}")
        self.workers = workers
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dcode-media")

    def shutdown(self, wait: bool = True) -> None:
        self.executor.shutdown(wait=wait, cancel_futures=not wait)

    def __enter__(self) -> TransformPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()
