"""Files built to hang or exhaust whatever reads them: named pipes with no writer, and PDFs that
inflate to gigabytes or declare pages the size of a field.

The PDFs are written by hand (a few objects and a cross-reference table), so each one holds
exactly the hostile part and nothing a library would tidy away. The inflating stream is real
Flate data: zlib output for a megabyte of zeros, flushed so that every following megabyte
compresses to the same bytes, repeated; decoders see an ordinary stream of zeros.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
GiB = 1 << 30
_MiB = 1 << 20


def fifo(path: Path) -> Path:
    """A named pipe at ``path`` that nobody ever writes to: opening it to read blocks for ever."""
    os.mkfifo(path)
    return path


def finishes_within(seconds: float, fn: Callable[[], T]) -> T:
    """``fn()``, run on a daemon thread so that a call stuck in the kernel fails the test
    (after ``seconds``) instead of hanging the whole run."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="hostile-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise AssertionError(f"still blocked after {seconds:g} s")
    if failure:
        raise failure[0]
    return outcome[0]


def zeros_flate(size: int) -> bytes:
    """A zlib stream that inflates to ``size`` zero bytes (a whole number of MiB), in about
    ``size / 1000`` bytes, built in milliseconds."""
    squeeze = zlib.compressobj(9)
    first = squeeze.compress(bytes(_MiB)) + squeeze.flush(zlib.Z_FULL_FLUSH)
    steady = squeeze.compress(bytes(_MiB)) + squeeze.flush(zlib.Z_FULL_FLUSH)
    return first + steady * (size // _MiB - 1) + squeeze.flush()


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def one_page_pdf(
    path: Path,
    content: bytes,
    *,
    size: tuple[float, float] = (612, 792),
    flate: bool = False,
    pages: int = 1,
) -> Path:
    """A PDF whose every page (one by default) draws ``content`` (Flate-compressed when ``flate``)."""
    stream_filter = " /Filter /FlateDecode" if flate else ""
    kids = " ".join(f"{3 + 2 * n} 0 R" for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
    ]
    for n in range(pages):
        box = f"[0 0 {size[0]:g} {size[1]:g}]"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox {box} /Contents {4 + 2 * n} 0 R /Resources << >> >>".encode()
        )
        objects.append(
            f"<< /Length {len(content)}{stream_filter} >>\nstream\n".encode()
            + content
            + b"\nendstream"
        )
    path.write_bytes(_pdf(objects))
    return path


def inflating_pdf(path: Path, inflated: int = 4 * GiB) -> Path:
    """One page whose content stream is ``inflated`` bytes of zeros: ~4 MB on disk for 4 GiB."""
    return one_page_pdf(path, zeros_flate(inflated), flate=True)


def huge_page_pdf(path: Path, points: float = 200_000) -> Path:
    """One square page ``points`` on a side (200,000 pt is 70 m), filled blue."""
    fill = f"0 0 1 rg 0 0 {points:g} {points:g} re f".encode()
    return one_page_pdf(path, fill, size=(points, points))
