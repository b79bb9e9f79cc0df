"""read_file on a PDF: the selected pages, in the best form the model takes.

- A model that takes PDFs gets the pages as one PDF (pypdf writes the selection; the whole
  unencrypted document is sent as it is), admitted byte for byte as a ``file`` attachment.
- One that takes images but not PDFs gets each page rendered (``pdf_render``: in a separate
  process, with a memory limit and a deadline) and admitted as an image, labelled ``Page N``.
- Every other model gets the pages' text (pypdf), with ``--- Page N ---`` markers, capped like a text
  file's output.

An encrypted PDF (unless an empty password opens it) or one pypdf cannot parse is a clear tool
error. Parsing, rendering and admission are blocking: they run on a daemon thread.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

from langchain_core.tools import ToolException

from dcode.agent.backends.deadline import detached
from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput
from dcode.agent.tools.formatting import plural
from dcode.agent.tools.media_result import MiB, media_result, require_size, text_block
from dcode.agent.tools.pdf_pages import PageRange, select_pages
from dcode.agent.tools.pdf_render import RenderError, render_pages
from dcode.agent.tools.read_file import NAME, BinaryFile
from dcode.agent.tools.read_text import MAX_OUTPUT_CHARS
from dcode.agent.tools.result import Block
from dcode.media.attachment import to_reference_block
from dcode.media.errors import AdmissionError
from dcode.media.file_attachment import to_file_reference_block
from dcode.media.store import AttachmentStore
from dcode.models.profiles import ModelProfile

if TYPE_CHECKING:
    from pypdf import PdfReader

# pypdf logs what it repairs in a damaged file; with no handler of its own those warnings would
# reach the terminal (Python's last-resort handler) under the TUI. A configured root still sees them.
logging.getLogger("pypdf").addHandler(logging.NullHandler())

MAX_PDF_BYTES = 100 * MiB
MAX_SENT_BYTES = 32 * MiB
"""The selected pages as one file: what a provider accepts in one request, at most."""


async def read_pdf(
    store: AttachmentStore, profile: ModelProfile, backend: Backend, file: BinaryFile
) -> ToolOutput:
    require_size(file, MAX_PDF_BYTES, "PDFs")
    data = await backend.read_bytes(file.path)
    # Rendering waits on the renderer for up to its deadlines: never on a thread exit joins.
    return await detached(_read, store, profile, data, file)


def _read(
    store: AttachmentStore, profile: ModelProfile, data: bytes, file: BinaryFile
) -> ToolOutput:
    reader = open_pdf(data, file.display)
    pages = select_pages(file.args.pages if file.args else None, len(reader.pages), file.display)
    if profile.pdf_inputs:
        return _as_file(store, reader, data, pages, file.display)
    if profile.image_inputs:
        return _as_images(store, reader, data, pages, file.display)
    return _as_text(reader, pages, file.display)


def open_pdf(data: bytes, shown: str) -> PdfReader:
    """A pypdf reader of ``data``, decrypted with the empty password when it is encrypted."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            fail(
                f"{NAME}: {shown} is encrypted (it needs a password); decrypt it first, e.g. qpdf --decrypt"
            )
        len(reader.pages)  # the page tree: where a damaged file usually fails
    except ToolException:
        raise
    except DependencyError as exc:
        fail(f"{NAME}: {shown} is encrypted and cannot be decrypted here: {exc}")
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds on damaged input
        fail(f"{NAME}: {shown} is not a readable PDF: {_reason(exc)}")
    return reader


def _summary(pages: PageRange, shown: str) -> str:
    return f"Read {pages.label} of {shown} ({plural(pages.count, 'page')}).{pages.continue_hint()}"


def _detail(pages: PageRange) -> str:
    return f"{pages.label} of {pages.count}"


def _as_file(
    store: AttachmentStore, reader: PdfReader, data: bytes, pages: PageRange, shown: str
) -> ToolOutput:
    whole = pages.first == 1 and pages.last == pages.count and not reader.is_encrypted
    sent = data if whole else _selection(reader, pages, shown)
    if len(sent) > MAX_SENT_BYTES:
        fail(
            f"{NAME}: {pages.label} of {shown} make {len(sent) / MiB:.1f} MiB, over the "
            f"{MAX_SENT_BYTES // MiB} MiB one request takes; read fewer pages"
        )
    att = store.admit_file(
        sent, kind="file", media_type="application/pdf", name=shown, detail=_detail(pages)
    )
    return media_result(_summary(pages, shown), [to_file_reference_block(att)])


def _selection(reader: PdfReader, pages: PageRange, shown: str) -> bytes:
    from pypdf import PdfWriter

    try:
        writer = PdfWriter()
        for number in pages.numbers:
            writer.add_page(reader.pages[number - 1])
        buffer = io.BytesIO()
        writer.write(buffer)
    except Exception as exc:  # noqa: BLE001
        fail(f"{NAME}: {pages.label} of {shown} could not be copied out of it: {_reason(exc)}")
    return buffer.getvalue()


def _as_images(
    store: AttachmentStore, reader: PdfReader, data: bytes, pages: PageRange, shown: str
) -> ToolOutput:
    # PDFium asks for the password pypdf found empty: render pypdf's decrypted copy instead.
    source, numbers = (
        (_selection(reader, pages, shown), range(1, len(pages.numbers) + 1))
        if reader.is_encrypted
        else (data, pages.numbers)
    )
    try:
        images = render_pages(source, numbers, shown_as=pages.numbers)
    except RenderError as exc:
        fail(f"{NAME}: {shown} could not be shown as page images: {exc}")
    try:
        atts = store.admit([(page.png, f"{shown} page {page.number}") for page in images])
    except AdmissionError as exc:
        fail(f"{NAME}: the rendered {pages.label} of {shown} were not admitted: {exc}")
    attached: list[Block] = []
    for page, att in zip(images, atts, strict=True):
        label = f"Page {page.number} ({page.note})" if page.note else f"Page {page.number}"
        attached += [text_block(label), to_reference_block(att)]
    return media_result(_summary(pages, shown), attached)


def _as_text(reader: PdfReader, pages: PageRange, shown: str) -> str:
    parts: list[str] = []
    size = 0
    for number in pages.numbers:
        part = f"--- Page {number} ---\n{_page_text(reader, number)}"
        if size + len(part) > MAX_OUTPUT_CHARS:
            if parts:
                shown_pages = PageRange(pages.first, number - 1, pages.count)
                note = f"Output capped at {MAX_OUTPUT_CHARS:,} chars: {shown_pages.label} of {shown} shown"
                return _joined(parts, note, pages, number)
            note = f"Page {number} of {shown} is longer than {MAX_OUTPUT_CHARS:,} chars and was cut"
            return _joined([part[:MAX_OUTPUT_CHARS]], note, pages, number + 1)
        parts.append(part)
        size += len(part) + 2
    return _joined(parts, f"Text of {pages.label} of {shown}", pages, pages.last + 1)


def _joined(parts: list[str], note: str, pages: PageRange, start: int) -> str:
    return (
        "\n\n".join(parts)
        + f"\n\n[{note} ({plural(pages.count, 'page')}).{pages.continue_hint(start)}]"
    )


def _page_text(reader: PdfReader, number: int) -> str:
    try:
        text = reader.pages[number - 1].extract_text() or ""
    except Exception as exc:  # noqa: BLE001
        return f"[the text of this page could not be extracted: {_reason(exc)}]"
    text = text.strip()
    return text or "[no text on this page: it may be a scanned image]"


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
