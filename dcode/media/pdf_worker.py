"""The PDF page renderer process: ``python -P -m dcode.media.pdf_worker``.

PDF pages are drawn (PDFium, through pypdfium2) here and not in dcode, for the reasons the video
decoder has its own process (``video_worker``), and one more:
- **memory is bounded.** A few megabytes of PDF can inflate to gigabytes (a content stream of
  compressed zeros, an image declared huge), and PDFium holds a page's decoded content in
  memory while it draws. Each job sets this process's address-space limit (``RLIMIT_AS``)
  first, so such a page fails here, alone, instead of taking dcode's memory with it; PDFium
  aborts when an allocation fails, which dcode reports as the page running out of memory.
- **the deadline is real.** PDFium cannot be interrupted mid-page; this process can be killed.

Each page is drawn at a scale computed from its size before anything is drawn: at most
``max_scale`` (200 dpi) and ``max_side`` pixels on its long side, so the bitmap never exceeds
``max_side``² pixels whatever the page's declared size.

One request per line on stdin (``video_protocol.request_line``)::

    {"op": "render", "path": ..., "pages": [1, 3], "max_side": 2048, "max_scale": 2.78,
     "memory_bytes": 1073741824}

Replies are ``video_protocol`` messages: ``start`` (``page``, and the ``memory_limit`` in force,
0 when none could be set) before each page, ``page`` (``page``, ``width``, ``height``,
``points``; the PNG as payload) after it, then ``end``; or else ``error``: ``message``, the
``page`` it happened on (0: before any), ``memory`` when it was a ``MemoryError``.
The process exits when stdin closes or after :data:`IDLE_SECONDS` without a request.
"""

# Any: pypdfium2 ships no types, and each request is JSON read from the parent's pipe

from __future__ import annotations

import io
import json
import math
import os
import resource
import select
import sys
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

from dcode.media.video_protocol import write_message

IDLE_SECONDS = 120.0
STALL_ENV = "DCODE_PDF_TEST_STALL"
"""For tests of the deadline: the page number on which this process hangs, answering nothing,
the way PDFium stuck on a page would."""


def bitmap_scale(width: float, height: float, max_side: int, max_scale: float) -> float:
    """The scale a page of ``width`` x ``height`` points is drawn at: at most ``max_scale``, and
    small enough that its long side fits ``max_side`` pixels."""
    longest = max(abs(width), abs(height), 1.0)
    if not math.isfinite(longest):
        return 0.0
    return min(max_side / longest, max_scale)


def _requests(fd: int) -> Iterator[dict[str, Any]]:
    """Requests from stdin until it closes or stays quiet for :data:`IDLE_SECONDS`."""
    buffer = b""
    while True:
        while b"\n" not in buffer:
            ready, _, _ = select.select([fd], [], [], IDLE_SECONDS)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                return
            buffer += chunk
        line, _, buffer = buffer.partition(b"\n")
        try:
            request = json.loads(line)
        except ValueError:
            request = None
        yield request if isinstance(request, dict) else {}


def _limit_memory(limit: int) -> int:
    """Cap this process's address space at ``limit`` bytes (within the hard limit); the cap set,
    or 0 where the system refuses one."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        return 0
    return cap


def _stall(number: int) -> None:
    if os.environ.get(STALL_ENV) == str(number):
        while True:
            time.sleep(3600)


def _render(document: Any, number: int, request: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    page = document[number - 1]  # loading parses the content: where an inflating stream bites
    try:
        width, height = page.get_size()
        scale = bitmap_scale(width, height, int(request["max_side"]), float(request["max_scale"]))
        if scale <= 0:
            raise ValueError(f"it has no usable size ({width} x {height} pt)")
        bitmap = page.render(scale=scale, fill_color=(255, 255, 255, 255))
        image = bitmap.to_pil()
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
    finally:
        page.close()
    header = {
        "kind": "page",
        "page": number,
        "width": image.width,
        "height": image.height,
        "points": [width, height],
    }
    return header, buffer.getvalue()


def _job(out: BinaryIO, request: dict[str, Any]) -> None:
    import pypdfium2 as pdfium

    limit = _limit_memory(int(request["memory_bytes"]))
    document: Any = None
    number = 0
    try:
        document = pdfium.PdfDocument(str(request["path"]))
        for number in request["pages"]:
            write_message(out, {"kind": "start", "page": number, "memory_limit": limit})
            _stall(number)
            header, png = _render(document, number, request)
            write_message(out, header, png)
    except MemoryError:
        write_message(
            out, {"kind": "error", "message": "out of memory", "page": number, "memory": True}
        )
        return
    except (pdfium.PdfiumError, ValueError) as exc:
        reason = str(exc) or type(exc).__name__
        message = reason if number else f"PDFium cannot open it: {reason}"
        write_message(out, {"kind": "error", "message": message, "page": number})
        return
    finally:
        if document is not None:
            document.close()
    write_message(out, {"kind": "end"})


def main() -> int:
    # The protocol owns the original stdout; anything a library prints lands on stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        import pypdfium2  # noqa: F401 - fail here, with the reason, rather than per job
    except ImportError as exc:
        write_message(out, {"kind": "error", "message": f"pypdfium2 cannot be loaded: {exc}"})
        return 1
    try:
        for request in _requests(sys.stdin.fileno()):
            if request.get("op") != "render":
                write_message(out, {"kind": "error", "message": "bad request"})
                continue
            try:
                _job(out, request)
            except (KeyError, TypeError, ValueError) as exc:
                write_message(out, {"kind": "error", "message": f"bad request: {exc}"})
    except (BrokenPipeError, KeyboardInterrupt):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
