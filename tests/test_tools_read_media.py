"""read_file on images, PDFs, audio and video, through the real LangChain tool and a real store.

The files are real: images from the Pillow corpus (corrupt and truncated ones too), PDFs written
with pypdf, a WAV written with ``wave``, a clip encoded with PyAV.
"""

from __future__ import annotations

import io
import shutil
import wave
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ContentStream, DictionaryObject, NameObject

from dcode.agent.backends import LocalBackend
from dcode.agent.events import ToolCallFinished
from dcode.agent.stream import StreamTranslator
from dcode.agent.tools import build_tools, read_audio, read_video
from dcode.agent.tools.filetypes import FileType, classify
from dcode.agent.tools.read_media import MediaReader
from dcode.agent.tools.spec import READ_FILE
from dcode.media import video
from dcode.media.attachment import from_reference_block, is_reference_block
from dcode.media.file_attachment import from_file_reference_block, is_file_reference_block
from dcode.media.frames import frames_in, windows_in
from dcode.media.limits import AdmissionLimits
from dcode.media.store import AttachmentStore
from dcode.models.profiles import ModelProfile
from tests.support import corpus

PILLOW, PYPDF = corpus.PILLOW, corpus.PYPDF
requires_corpus = corpus.requires_corpus(PILLOW)

TEXT_ONLY = ModelProfile()
IMAGES = ModelProfile(image_inputs=True)
PDFS = ModelProfile(image_inputs=True, pdf_inputs=True)


# --- helpers


def text_pdf(
    path: Path, texts: list[str], *, password: str | None = None, owner: str | None = None
) -> Path:
    """A PDF with one page per text (Helvetica, a line per ``\\n``), written with pypdf."""
    writer = PdfWriter()
    for text in texts:
        page = writer.add_blank_page(612, 792)
        font = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        stream = ContentStream(None, writer)
        lines = " ".join(f"({line}) '" for line in text.split("\n"))
        stream.set_data(f"BT /F1 12 Tf 72 720 Td 14 TL {lines} ET".encode("latin-1"))
        page.replace_contents(stream)
    if password is not None:
        writer.encrypt(password, owner)
    writer.write(path)
    return path


def wav_file(path: Path, seconds: float, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(b"\x10\x00" * int(seconds * rate))
    return path


def clip_file(path: Path, seconds: int, fps: int = 5) -> Path:
    """An MPEG-4 video, 96x64, a different colour every second."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        stream.codec_context.time_base = Fraction(1, fps)
        for index in range(seconds * fps):
            image = Image.new("RGB", (96, 64), (40 * (index // fps) % 256, 120, 200))
            frame = av.VideoFrame.from_image(image)
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def tool_for(workspace: Path, store: AttachmentStore, profile: ModelProfile = IMAGES) -> BaseTool:
    tools = build_tools(LocalBackend(workspace), binary_reader=MediaReader(store, profile))
    return next(t for t in tools if t.name == READ_FILE.name)


async def call(tool: BaseTool, **args: Any) -> ToolMessage:
    message = await tool.ainvoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    return message


def stored_objects(store: AttachmentStore) -> set[Path]:
    return set(store.objects_dir.rglob("*")) if store.objects_dir.exists() else set()


# --- images


@requires_corpus
async def test_an_image_is_admitted_and_the_result_is_its_reference(
    workspace: Path, store: AttachmentStore
) -> None:
    (workspace / "pics").mkdir()
    shutil.copyfile(PILLOW / "hopper.jpg", workspace / "pics" / "hopper.jpg")
    message = await call(tool_for(workspace, store), file_path="pics/hopper.jpg")
    assert message.status == "success"
    summary, block = message.content
    assert summary == {"type": "text", "text": "Read image pics/hopper.jpg (128x128)."}
    assert is_reference_block(block) and "base64" not in block
    att = from_reference_block(block)
    assert att.name == "pics/hopper.jpg" and store.contains(att)


@requires_corpus
@pytest.mark.parametrize("name", ["broken.png", "truncated_image.png", "truncated_jpeg.jpg"])
async def test_a_corrupt_or_truncated_image_is_one_clear_error(
    workspace: Path, store: AttachmentStore, name: str
) -> None:
    shutil.copyfile(PILLOW / name, workspace / name)
    message = await call(tool_for(workspace, store), file_path=name)
    assert message.status == "error"
    assert isinstance(message.content, str)
    assert message.content.startswith(f"read_file: {name} could not be read as an image: ")
    assert "\n" not in message.content and "Traceback" not in message.content
    assert stored_objects(store) == set()


@requires_corpus
async def test_an_image_over_the_size_limit_is_refused(workspace: Path, tmp_path: Path) -> None:
    small = AttachmentStore(tmp_path / "small", limits=AdmissionLimits(max_source_bytes=1000))
    shutil.copyfile(PILLOW / "hopper.png", workspace / "big.png")
    message = await call(tool_for(workspace, small), file_path="big.png")
    assert message.status == "error"
    assert "read_file: big.png could not be read as an image: too large" in str(message.content)


@requires_corpus
async def test_reading_an_attachment_by_its_store_path_admits_nothing_new(
    workspace: Path, store: AttachmentStore
) -> None:
    shutil.copyfile(PILLOW / "hopper.png", workspace / "a.png")
    tool = tool_for(workspace, store)
    first = from_reference_block((await call(tool, file_path="a.png")).content[1])
    before = stored_objects(store)
    stored = str(store.path_for(first))  # what the offload placeholder tells the model to read
    message = await call(tool, file_path=stored)
    assert message.status == "success"
    again = from_reference_block(message.content[1])
    assert again.id == first.id and again.name == stored
    assert stored_objects(store) == before


async def test_a_png_that_is_text_reads_as_text(workspace: Path, store: AttachmentStore) -> None:
    (workspace / "notes.png").write_text("not a picture\nat all\n")
    message = await call(tool_for(workspace, store), file_path="notes.png")
    assert message.content == "     1\tnot a picture\n     2\tat all"


@requires_corpus
async def test_a_txt_that_is_a_png_reads_as_an_image(
    workspace: Path, store: AttachmentStore
) -> None:
    shutil.copyfile(PILLOW / "hopper.png", workspace / "export.txt")
    message = await call(tool_for(workspace, store), file_path="export.txt")
    assert message.status == "success" and is_reference_block(message.content[1])


async def test_an_unknown_binary_is_refused_as_before(
    workspace: Path, store: AttachmentStore
) -> None:
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    message = await call(tool_for(workspace, store), file_path="blob.bin")
    assert message.status == "error"
    assert (
        message.content
        == "read_file: blob.bin is a binary file (application/octet-stream); read_file only shows text"
    )


# --- PDF


async def test_pdf_text_has_page_markers_and_says_how_to_continue(
    workspace: Path, store: AttachmentStore
) -> None:
    text_pdf(workspace / "long.pdf", [f"Text of page {n}" for n in range(1, 26)])
    tool = tool_for(workspace, store, TEXT_ONLY)
    first = await call(tool, file_path="long.pdf")
    assert first.status == "success" and isinstance(first.content, str)
    assert first.content.startswith(
        "--- Page 1 ---\nText of page 1\n\n--- Page 2 ---\nText of page 2"
    )
    assert "--- Page 20 ---" in first.content and "--- Page 21 ---" not in first.content
    assert first.content.endswith(
        '[Text of pages 1-20 of long.pdf (25 pages). To continue, call read_file with pages="21-25".]'
    )
    rest = await call(tool, file_path="long.pdf", pages="21-25")
    assert rest.content.startswith("--- Page 21 ---\nText of page 21")
    assert rest.content.endswith("[Text of pages 21-25 of long.pdf (25 pages).]")
    one = await call(tool, file_path="long.pdf", pages=" 3 ")
    assert (
        one.content
        == '--- Page 3 ---\nText of page 3\n\n[Text of page 3 of long.pdf (25 pages). To continue, call read_file with pages="4-23".]'
    )
    assert stored_objects(store) == set()


async def test_pdf_text_is_capped_like_a_text_file(workspace: Path, store: AttachmentStore) -> None:
    page = "\n".join("x" * 90 for _ in range(400))  # ~36,000 chars a page
    text_pdf(workspace / "dense.pdf", [page] * 4)
    message = await call(tool_for(workspace, store, TEXT_ONLY), file_path="dense.pdf")
    text = str(message.content)
    assert len(text) < 80_000 + 300
    assert "--- Page 2 ---" in text and "--- Page 3 ---" not in text
    assert text.endswith(
        '[Output capped at 80,000 chars: pages 1-2 of dense.pdf shown (4 pages). To continue, call read_file with pages="3-4".]'
    )


@pytest.mark.parametrize(
    ("pages", "error"),
    [
        ("0", 'pages "0" is not a range of pages'),
        ("4-2", 'pages "4-2" is not a range of pages'),
        ("first", 'pages must be a page number or a range like "1-5"'),
        ("1-21", 'at most 20 pages per call; "1-21" is 21 pages (use "1-20")'),
        ("30", "long.pdf has 25 pages; page 30 does not exist"),
        ("20-30", 'long.pdf has 25 pages; pages "20-30" goes past the end (use "20-25")'),
    ],
)
async def test_pages_are_checked_against_the_document(
    workspace: Path, store: AttachmentStore, pages: str, error: str
) -> None:
    text_pdf(workspace / "long.pdf", [f"page {n}" for n in range(1, 26)])
    message = await call(tool_for(workspace, store, TEXT_ONLY), file_path="long.pdf", pages=pages)
    assert message.status == "error"
    assert error in str(message.content)


async def test_pages_go_as_a_pdf_when_the_model_takes_pdfs(
    workspace: Path, store: AttachmentStore
) -> None:
    text_pdf(workspace / "doc.pdf", [f"Body of page {n}" for n in range(1, 6)])
    message = await call(tool_for(workspace, store, PDFS), file_path="doc.pdf", pages="2-3")
    summary, block = message.content
    assert (
        summary["text"]
        == 'Read pages 2-3 of doc.pdf (5 pages). To continue, call read_file with pages="4-5".'
    )
    assert is_file_reference_block(block) and "base64" not in block
    att = from_file_reference_block(block)
    assert (att.kind, att.media_type, att.name, att.detail) == (
        "file",
        "application/pdf",
        "doc.pdf",
        "pages 2-3 of 5",
    )
    sent = PdfReader(io.BytesIO(store.read_bytes(att)))
    assert [p.extract_text() for p in sent.pages] == ["Body of page 2", "Body of page 3"]
    whole = from_file_reference_block(
        (await call(tool_for(workspace, store, PDFS), file_path="doc.pdf")).content[1]
    )
    assert (
        store.read_bytes(whole) == (workspace / "doc.pdf").read_bytes()
    )  # all of it: sent as it is


async def test_pages_go_as_images_when_the_model_takes_images_only(
    workspace: Path, store: AttachmentStore
) -> None:
    text_pdf(workspace / "doc.pdf", ["Alpha", "Beta", "Gamma"])
    message = await call(tool_for(workspace, store, IMAGES), file_path="doc.pdf", pages="2-3")
    summary, *attached = message.content
    assert summary["text"] == "Read pages 2-3 of doc.pdf (3 pages)."
    assert [b.get("text") for b in attached[::2]] == ["Page 2", "Page 3"]
    for block in attached[1::2]:
        att = from_reference_block(block)
        assert store.contains(att) and max(att.width, att.height) <= 2048
        assert att.height > att.width  # portrait, as the page
        with Image.open(store.path_for(att)) as page:
            assert page.getpixel((5, 5)) in ((255, 255, 255), (255, 255, 255, 255), 255)


async def test_an_encrypted_pdf_is_a_clear_error(workspace: Path, store: AttachmentStore) -> None:
    text_pdf(workspace / "locked.pdf", ["secret"], password="hunter2")
    for profile in (TEXT_ONLY, IMAGES, PDFS):
        message = await call(tool_for(workspace, store, profile), file_path="locked.pdf")
        assert message.status == "error"
        assert str(message.content).startswith(
            "read_file: locked.pdf is encrypted (it needs a password)"
        )


async def test_a_pdf_an_empty_password_opens_is_read(
    workspace: Path, store: AttachmentStore
) -> None:
    text_pdf(workspace / "owner.pdf", ["Readable by anyone"], password="", owner="boss")
    text = await call(tool_for(workspace, store, TEXT_ONLY), file_path="owner.pdf")
    assert text.content.startswith("--- Page 1 ---\nReadable by anyone")
    images = await call(tool_for(workspace, store, IMAGES), file_path="owner.pdf")
    assert images.status == "success" and is_reference_block(images.content[2])
    sent = await call(tool_for(workspace, store, PDFS), file_path="owner.pdf")
    decrypted = PdfReader(io.BytesIO(store.read_bytes(from_file_reference_block(sent.content[1]))))
    assert not decrypted.is_encrypted and decrypted.pages[0].extract_text() == "Readable by anyone"


@pytest.mark.parametrize(
    "data", [b"%PDF-1.7\n1 0 obj <<\ngarbage", b"%PDF-1.4\n" + bytes(range(256)) * 8]
)
async def test_a_corrupt_pdf_is_a_clear_error(
    workspace: Path, store: AttachmentStore, data: bytes
) -> None:
    (workspace / "bad.pdf").write_bytes(data)
    for profile in (TEXT_ONLY, IMAGES, PDFS):
        message = await call(tool_for(workspace, store, profile), file_path="bad.pdf")
        assert message.status == "error"
        assert str(message.content).startswith("read_file: bad.pdf is not a readable PDF: ")


@corpus.requires_corpus(PYPDF)
@pytest.mark.parametrize("profile", [TEXT_ONLY, IMAGES, PDFS], ids=["text", "images", "pdf"])
async def test_every_corpus_pdf_reads_or_says_why_not(
    store: AttachmentStore, profile: ModelProfile
) -> None:
    """Real-world PDFs (forms, OCR, broken xrefs, every kind of encryption): text, pages or a
    clear error, never a crash."""
    tool = tool_for(PYPDF, store, profile)
    outcomes: dict[str, int] = {"success": 0, "encrypted": 0}
    for path in sorted(PYPDF.glob("*.pdf")):
        message = await call(tool, file_path=path.name)
        if message.status == "success":
            outcomes["success"] += 1
            assert (
                isinstance(message.content, str) and message.content.startswith("--- Page 1 ---")
            ) or (message.content[0]["text"].startswith(("Read page 1 of", "Read pages 1-"))), (
                path.name
            )
        else:
            assert str(message.content).startswith(f"read_file: {path.name} is encrypted"), (
                path.name,
                message.content,
            )
            outcomes["encrypted"] += 1
    assert outcomes["success"] >= 45 and outcomes["encrypted"] <= 7, outcomes


# --- audio


async def test_a_wav_is_attached_as_audio_with_its_duration(
    workspace: Path, store: AttachmentStore
) -> None:
    wav_file(workspace / "voice.wav", 3.25)
    for profile in (
        TEXT_ONLY,
        ModelProfile(audio_inputs=True),
    ):  # the projection decides what is sent
        message = await call(tool_for(workspace, store, profile), file_path="voice.wav")
        summary, block = message.content
        assert summary == {"type": "text", "text": "Read audio voice.wav (3.2 s)."}
        att = from_file_reference_block(block)
        assert (att.kind, att.media_type, att.name) == ("audio", "audio/wav", "voice.wav")
        assert store.read_bytes(att) == (workspace / "voice.wav").read_bytes()


async def test_an_audio_file_over_the_cap_is_refused(
    workspace: Path, store: AttachmentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_audio, "MAX_AUDIO_BYTES", 1024 * 1024)
    wav_file(workspace / "long.wav", 70.0)  # 1.1 MB
    message = await call(tool_for(workspace, store), file_path="long.wav")
    assert message.status == "error"
    assert message.content == "read_file: long.wav is 1.1 MiB; audio files over 1 MiB are not read"


# --- video


requires_av = pytest.mark.skipif(
    video.video_support() is not None, reason="PyAV is not usable here"
)


@requires_av
async def test_a_video_read_is_its_summary_then_the_window(
    workspace: Path, store: AttachmentStore
) -> None:
    clip_file(workspace / "clip.mp4", 5)
    message = await call(tool_for(workspace, store), file_path="clip.mp4")
    assert message.status == "success"
    summary, header, *rest = message.content
    assert summary == {"type": "text", "text": "Read video clip.mp4: sampled 3 frames."}
    assert "Reading first 100s of clip.mp4 at 0.5 fps." in header["text"]
    assert [b.get("text") for b in rest[::2]] == [
        "Frame at t=00:00:00.000",
        "Frame at t=00:00:02.000",
        "Frame at t=00:00:04.000",
    ]
    assert all(is_reference_block(b) for b in rest[1::2])
    strip = frames_in(message.content)
    assert (
        strip is not None
        and [f.t for f in strip.frames] == [0.0, 2.0, 4.0]
        and strip.source == "clip.mp4"
    )
    [window] = windows_in(message.content)
    assert (window.first_block, window.end_block) == (1, len(message.content))
    [event] = StreamTranslator(None).on_message(message)  # what the TUI's tool widget gets
    assert isinstance(event, ToolCallFinished) and event.result.frames is not None
    assert [f.t for f in event.result.frames.frames] == [0.0, 2.0, 4.0]
    assert event.result.text.splitlines()[0] == "Read video clip.mp4: sampled 3 frames."


@requires_av
async def test_video_offset_and_limit_are_seconds(workspace: Path, store: AttachmentStore) -> None:
    clip_file(workspace / "clip.mp4", 5)
    tool = tool_for(workspace, store)
    later = await call(tool, file_path="clip.mp4", offset=2, limit=2)
    assert later.content[0]["text"] == "Read video clip.mp4: sampled 1 frame."
    assert "Reading [2.000s, 4.000s) of clip.mp4" in later.content[1]["text"]
    clamped = await call(tool, file_path="clip.mp4", offset=-5)
    assert "Reading first 100s of clip.mp4" in clamped.content[1]["text"]
    for limit in (0, -1):
        refused = await call(tool, file_path="clip.mp4", limit=limit)
        assert refused.status == "error"
        assert (
            refused.content
            == f"Error reading video clip.mp4: limit must be a positive number of seconds, got {float(limit)!r}"
        )


@requires_av
async def test_a_video_that_cannot_be_decoded_is_a_video_error(
    workspace: Path, store: AttachmentStore
) -> None:
    (workspace / "bad.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 200)
    message = await call(tool_for(workspace, store), file_path="bad.mp4")
    assert message.status == "error"
    assert str(message.content).startswith("Error reading video bad.mp4: ")


async def test_without_pyav_a_small_video_is_attached_whole(
    workspace: Path, store: AttachmentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        video, "video_support", lambda: "video frame sampling needs PyAV; pip install av"
    )
    (workspace / "a.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x01" * 500)
    (workspace / "b.mkv").write_bytes(b"\x1a\x45\xdf\xa3" + b"\x01" * 500)
    tool = tool_for(workspace, store)
    mp4 = from_file_reference_block((await call(tool, file_path="a.mp4")).content[1])
    mkv = from_file_reference_block((await call(tool, file_path="b.mkv")).content[1])
    assert (mp4.kind, mp4.media_type) == ("video", "video/mp4")
    assert (mkv.kind, mkv.media_type) == ("file", "video/x-matroska")
    monkeypatch.setattr(read_video, "MAX_WHOLE_VIDEO_BYTES", 256)
    message = await call(tool, file_path="a.mp4")
    assert message.status == "error"
    assert message.content == (
        "read_file: a.mp4 is 512 bytes; videos over 256 bytes are not read whole, "
        "and video frame sampling needs PyAV; pip install av"
    )


# --- kinds


@pytest.mark.parametrize(
    ("name", "head", "kind", "mime"),
    [
        ("notes.txt", b"BMW service history\n", "text", "text/plain"),  # "BM" starts a bitmap too
        ("id3.md", b"ID3 tags, explained\n", "text", "text/plain"),
        ("plain.pdf", b"just words\n", "text", "text/plain"),
        (
            "ascii.bin",
            b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\n",
            "pdf",
            "application/pdf",
        ),  # an all-ASCII PDF
        ("recording", b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio", "audio/wav"),
        (
            "song.mp3",
            b"\xff\xfb\x90\x64\x00\x0f\xf0",
            "audio",
            "audio/mpeg",
        ),  # no ID3 tag: the name decides
        ("movie.m4v", b"\x00\x00\x00\x18ftypmp42\x00\x00", "video", "video/mp4"),
        ("clip.dat", b"\x1aE\xdf\xa3\x01\x01webm", "video", "video/webm"),
        ("blob.dat", b"\x00\x01\x02\x03", "binary", "application/octet-stream"),
    ],
)
def test_kinds_come_from_the_bytes_first(name: str, head: bytes, kind: str, mime: str) -> None:
    assert classify(name, head, complete=True) == FileType(kind, mime)  # type: ignore[arg-type]
