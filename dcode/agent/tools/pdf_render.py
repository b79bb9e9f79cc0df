"""PDF pages as images, for a model that takes images but not PDFs: drawn by the renderer
process (``dcode.media.pdf_worker``) under a memory limit and a deadline.

A hostile or broken PDF (a few megabytes that inflate to gigabytes, a page that never finishes)
costs the renderer, never dcode: the page fails with an error saying which limit it hit, and
the renderer is killed (or, after a clean job, kept for the next read, as the video decoder is).
The document goes to the renderer as a private temporary file, so it reads exactly the bytes
dcode checked.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from dcode.agent.tools.media_result import MiB
from dcode.media.video_client import DeadlineExceeded, WorkerGone, WorkerPool, run_job
from dcode.media.video_protocol import Message

GiB = 1024 * MiB
MAX_SIDE = 2048
"""Long side of a rendered page in pixels: within the store's normalized size, so admission
keeps the render as it is, and large enough to read body text. It bounds every page's bitmap
to 2048² pixels (16 MiB), whatever size the page declares."""
MAX_SCALE = 200 / 72
"""At most 200 dpi, so a small page is not blown up."""
MEMORY_LIMIT = GiB
"""The renderer's address space: a scanned page at 600 dpi fits many times over."""
PAGE_SECONDS = 20.0
"""How long one page may take to draw."""
START_SECONDS = 10.0
"""For starting the renderer (Python and PDFium load) and opening the document."""
_SLOW_DPI = 50
"""Below this a page's small text is unreadable: its label says so."""

POOL = WorkerPool(module="dcode.media.pdf_worker", noun="the PDF renderer")
atexit.register(POOL.close)


class RenderError(Exception):
    """A page could not be drawn; the text says which and why, as a clause ("page 3 ...")."""


@dataclass(frozen=True, slots=True)
class RenderLimits:
    memory_bytes: int = MEMORY_LIMIT
    page_seconds: float = PAGE_SECONDS
    start_seconds: float = START_SECONDS
    max_side: int = MAX_SIDE
    max_scale: float = MAX_SCALE


@dataclass(frozen=True, slots=True)
class RenderedPage:
    number: int
    """As the caller counts it (the document's page number)."""
    png: bytes
    width: int
    height: int
    points: tuple[float, float]
    """The page's size in PDF points (1/72 in)."""

    @property
    def note(self) -> str:
        """Empty, or why small text on this page may be unreadable (a huge page shrunk to fit)."""
        dpi = 72 * max(self.width, self.height) / max(*self.points, 1.0)
        if dpi >= _SLOW_DPI:
            return ""
        inches = " x ".join(f"{side / 72:,.0f}" for side in self.points)
        return f"a {inches} in page drawn at {self.width}x{self.height} px ({dpi:.0f} dpi): small text may be unreadable"


def render_pages(
    data: bytes,
    numbers: Sequence[int],
    *,
    shown_as: Sequence[int] | None = None,
    limits: RenderLimits = RenderLimits(),
) -> list[RenderedPage]:
    """Each page of ``numbers`` (counted from 1) of the PDF ``data`` as a PNG; blocking.

    ``shown_as`` gives the page numbers to report (when ``data`` holds a selection of another
    document's pages). Raises :class:`RenderError`.
    """
    labels = dict(zip(numbers, shown_as or numbers, strict=True))
    fd, name = tempfile.mkstemp(prefix="dcode-pdf-", suffix=".pdf")  # 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        request = {
            "op": "render",
            "path": name,
            "pages": list(numbers),
            "max_side": limits.max_side,
            "max_scale": limits.max_scale,
            "memory_bytes": limits.memory_bytes,
        }
        return _collect(request, labels, limits)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


@dataclass(slots=True)
class _Clock:
    """The job's deadline, moved on as each page starts: every page gets its own time."""

    until: float

    def __call__(self) -> float:
        return self.until


def _collect(
    request: dict[str, object], labels: dict[int, int], limits: RenderLimits
) -> list[RenderedPage]:
    rendered: list[RenderedPage] = []
    page, memory_limit = 0, 0
    clock = _Clock(time.monotonic() + limits.start_seconds + limits.page_seconds)
    try:
        for message in run_job(request, clock, POOL):
            match message.kind:
                case "start":
                    page, memory_limit = (
                        int(message.header["page"]),
                        int(message.header["memory_limit"]),
                    )
                    clock.until = time.monotonic() + limits.page_seconds
                case "page":
                    rendered.append(_page(message, labels))
                case "error":
                    raise RenderError(_failure(message, labels, memory_limit))
    except DeadlineExceeded:
        if page:
            reason = f"page {labels.get(page, page)} took more than {limits.page_seconds:g} s to draw and was stopped"
        else:
            reason = f"the PDF renderer did not open it within {limits.start_seconds + limits.page_seconds:g} s"
        raise RenderError(reason) from None
    except WorkerGone as exc:
        raise RenderError(_crash(exc, labels.get(page, page), memory_limit)) from None
    return rendered


def _page(message: Message, labels: dict[int, int]) -> RenderedPage:
    header = message.header
    width, height = header["points"]
    return RenderedPage(
        labels[int(header["page"])],
        message.payload,
        int(header["width"]),
        int(header["height"]),
        (float(width), float(height)),
    )


def _failure(message: Message, labels: dict[int, int], memory_limit: int) -> str:
    page = labels.get(int(message.header.get("page", 0)), 0)
    if message.header.get("memory"):
        return _out_of_memory(page, memory_limit)
    reason = str(message.header.get("message", "the PDF renderer failed"))
    return f"page {page}: {reason}" if page else reason


def _crash(exc: WorkerGone, page: int, memory_limit: int) -> str:
    # PDFium aborts the process when an allocation fails; under the limit, that is the limit.
    if exc.signal == signal.SIGABRT and memory_limit and page:
        return _out_of_memory(page, memory_limit)
    if exc.signal is not None and page:
        return f"the PDF renderer crashed on page {page} ({signal.Signals(exc.signal).name})"
    return exc.detail


def _out_of_memory(page: int, memory_limit: int) -> str:
    if not memory_limit:
        return f"rendering page {page} ran out of memory"
    limit = (
        f"{memory_limit / GiB:g} GiB" if memory_limit >= GiB else f"{memory_limit / MiB:.0f} MiB"
    )
    return f"rendering page {page} ran out of its {limit} memory limit (its content inflates to more than that)"
