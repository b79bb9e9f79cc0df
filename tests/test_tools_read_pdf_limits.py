"""read_file on hostile PDFs: a content stream that inflates to 4 GiB, a page 70 m wide, a page
that never finishes drawing. Each ends with a clear result, and dcode's own memory stays where
it was: page images are drawn by the renderer process, under its memory limit.

Peak memory is read from ``getrusage``: the test process's high-water mark must not rise by
anything like the stream's size (it rose by about 5 GiB when pages were drawn in-process).
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from dcode.agent.tools import pdf_render
from dcode.agent.tools.pdf_render import RenderError, RenderLimits, render_pages
from dcode.media.attachment import from_reference_block
from dcode.media.file_attachment import from_file_reference_block
from dcode.media.pdf_worker import STALL_ENV
from dcode.media.store import AttachmentStore
from tests.support.hostile_files import GiB, huge_page_pdf, inflating_pdf, one_page_pdf
from tests.test_tools_read_media import IMAGES, PDFS, TEXT_ONLY, call, tool_for

MiB = 1 << 20


def peak_rss() -> int:
    """This process's largest resident size so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return inflating_pdf(tmp_path_factory.mktemp("pdf") / "bomb.pdf", 4 * GiB)


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


async def test_a_4_gib_content_stream_hits_the_renderers_memory_limit(
    bomb: Path, store: AttachmentStore
) -> None:
    assert bomb.stat().st_size < 5 * MiB
    before = peak_rss()
    message: ToolMessage = await call(tool_for(bomb.parent, store, IMAGES), file_path="bomb.pdf")
    assert message.status == "error"
    assert message.content == (
        "read_file: bomb.pdf could not be shown as page images: rendering page 1 ran out of its "
        "1 GiB memory limit (its content inflates to more than that)"
    )
    assert peak_rss() - before < 256 * MiB
    # The renderer that hit the limit is gone; the next PDF gets a fresh one and reads fine.
    fine = one_page_pdf(bomb.parent / "fine.pdf", b"0 0 1 rg 0 0 100 100 re f")
    assert (
        await call(tool_for(fine.parent, store, IMAGES), file_path="fine.pdf")
    ).status == "success"


async def test_the_same_pdf_as_text_or_as_a_file_stays_small(
    bomb: Path, store: AttachmentStore
) -> None:
    """pypdf caps what one stream may inflate to, so text mode never holds the 4 GiB."""
    before = peak_rss()
    text = await call(tool_for(bomb.parent, store, TEXT_ONLY), file_path="bomb.pdf")
    assert text.status == "success" and text.content.startswith("--- Page 1 ---\n[")
    sent = await call(tool_for(bomb.parent, store, PDFS), file_path="bomb.pdf")
    assert sent.status == "success"
    assert store.read_bytes(from_file_reference_block(sent.content[1])) == bomb.read_bytes()
    assert peak_rss() - before < 256 * MiB


async def test_a_page_70_m_wide_is_drawn_at_2048_px_and_says_so(
    tmp_path: Path, store: AttachmentStore
) -> None:
    huge_page_pdf(tmp_path / "field.pdf", 200_000)
    message = await call(tool_for(tmp_path, store, IMAGES), file_path="field.pdf")
    assert message.status == "success"
    summary, label, image = message.content
    assert summary["text"] == "Read page 1 of field.pdf (1 page)."
    assert label["text"] == (
        "Page 1 (a 2,778 x 2,778 in page drawn at 2048x2048 px (1 dpi): small text may be unreadable)"
    )
    att = from_reference_block(image)
    assert (att.original.width, att.original.height) == (2048, 2048)


def test_a_page_that_never_finishes_is_stopped_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Page 2 hangs the renderer: it is stopped once page 2 alone has had its time."""
    data = one_page_pdf(tmp_path / "slow.pdf", b"0 0 1 rg 0 0 100 100 re f", pages=3).read_bytes()
    pdf_render.POOL.close()  # idle renderers were started without the hook
    monkeypatch.setenv(STALL_ENV, "2")
    try:
        with pytest.raises(RenderError) as raised:
            render_pages(data, [1, 2, 3], limits=RenderLimits(page_seconds=1.5, start_seconds=8.0))
    finally:
        pdf_render.POOL.close()
    assert str(raised.value) == "page 2 took more than 1.5 s to draw and was stopped"


def test_pages_are_reported_by_the_numbers_the_caller_gives(tmp_path: Path) -> None:
    """A decrypted selection is drawn as pages 1..n but named by the document's numbers."""
    data = huge_page_pdf(tmp_path / "field.pdf", 200_000).read_bytes()
    [page] = render_pages(data, [1], shown_as=[7])
    assert (page.number, page.width, page.height, page.points) == (
        7,
        2048,
        2048,
        (200_000.0, 200_000.0),
    )
