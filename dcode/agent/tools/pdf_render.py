"""PDF pages as images (pypdfium2), for a model that takes images but not PDFs.

PDFium is not thread-safe, and read_file calls may run side by side on worker threads, so
every use of it here holds one lock.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterable

MAX_SIDE = 2048
"""Long side of a rendered page in pixels: within the store's normalized size, so admission
keeps the render as it is, and large enough to read body text."""
MAX_SCALE = 200 / 72
"""At most 200 dpi, so a small page is not blown up."""

_PDFIUM = threading.Lock()


class RenderError(Exception):
    """PDFium could not open the document or render a page; the text says why."""


def render_pages(data: bytes, numbers: Iterable[int]) -> list[bytes]:
    """PNG bytes of each page (counted from 1) of the PDF ``data``; blocking."""
    import pypdfium2 as pdfium

    rendered: list[bytes] = []
    with _PDFIUM:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise RenderError(str(exc)) from exc
        try:
            for number in numbers:
                rendered.append(_render(document, number))
        except pdfium.PdfiumError as exc:
            raise RenderError(f"page {number}: {exc}") from exc
        finally:
            document.close()
    return rendered


def _render(document: object, number: int) -> bytes:
    page = document[number - 1]  # type: ignore[index]
    try:
        width, height = page.get_size()
        scale = min(MAX_SIDE / max(width, height, 1.0), MAX_SCALE)
        bitmap = page.render(scale=scale, fill_color=(255, 255, 255, 255))
        buffer = io.BytesIO()
        bitmap.to_pil().save(buffer, "PNG")
        return buffer.getvalue()
    finally:
        page.close()
