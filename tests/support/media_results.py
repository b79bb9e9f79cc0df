"""Media tool results in the shape read_file gives them, built from real files.

A media result is a list whose first block is the text summary and whose following blocks are
the attached content (``dcode/agent/tools`` and the request projection share that contract).
The files are real: corpus images (``CORPUS_PNGS``; a test that reads them is marked
``requires_pngs``) admitted with ``store.admit``, a PDF written with pypdf and a
WAV with the standard library's ``wave``, admitted byte for byte with ``store.admit_file``.
"""

from __future__ import annotations

import io
import wave
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from dcode.agent.tools.spec import READ_FILE
from dcode.media.attachment import to_reference_block
from dcode.media.file_attachment import to_file_reference_block
from dcode.media.store import AttachmentStore, Source
from tests.support.corpus import PILLOW, requires_corpus

CORPUS_PNGS = ("7x13.png", "1_trns.png", "a_fli.png")
requires_pngs = requires_corpus(*(PILLOW / name for name in CORPUS_PNGS))
"""The mark of a test that reads ``CORPUS_PNGS``: it skips, naming the file, without them."""


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def image_result(store: AttachmentStore, path: Path, shown: str) -> list[dict[str, Any]]:
    att = store.admit([Source.from_path(path, shown)])[0]
    return [text(f"Read image {shown} ({att.width}x{att.height})."), to_reference_block(att)]


def pdf_bytes(pages: int = 2) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_result(store: AttachmentStore, shown: str, pages: int = 2) -> list[dict[str, Any]]:
    att = store.admit_file(
        pdf_bytes(pages),
        kind="file",
        media_type="application/pdf",
        name=shown,
        detail=f"pages 1-{pages}",
    )
    return [text(f"Read pages 1-{pages} of {shown} ({pages} pages)."), to_file_reference_block(att)]


def wav_bytes(seconds: float = 0.25, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(bytes(int(seconds * rate) * 2))
    return out.getvalue()


def mp3_bytes(seconds: float = 0.25, rate: int = 22050) -> bytes:
    """A real MP3 (a quiet tone), encoded with PyAV's MP3 encoder."""
    import math

    import av

    count = int(seconds * rate)
    samples = b"".join(
        int(3000 * math.sin(i * 0.05)).to_bytes(2, "little", signed=True) for i in range(count)
    )
    out = io.BytesIO()
    with av.open(out, "w", format="mp3") as container:
        stream = container.add_stream("mp3", rate=rate, layout="mono")
        frame = av.AudioFrame(format="s16", layout="mono", samples=count)
        frame.planes[0].update(samples)
        frame.sample_rate = rate
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    return out.getvalue()


def audio_result(store: AttachmentStore, shown: str) -> list[dict[str, Any]]:
    att = store.admit_file(wav_bytes(), kind="audio", media_type="audio/wav", name=shown)
    return [text(f"Read audio {shown} (0.2 s)."), to_file_reference_block(att)]


def video_result(store: AttachmentStore, shown: str, data: bytes) -> list[dict[str, Any]]:
    att = store.admit_file(data, kind="video", media_type="video/mp4", name=shown)
    return [text(f"Read video {shown}."), to_file_reference_block(att)]


def read_batch(
    ai_id: str, results: list[tuple[str, list[dict[str, Any]]]], *, pending: tuple[str, ...] = ()
) -> list:
    """An assistant message calling read_file once per (path, result), then the results in
    call order; the paths in ``pending`` are called but get no result."""
    calls = [
        {
            "id": f"{ai_id}-call{i}",
            "name": READ_FILE.name,
            "args": {"file_path": path},
            "type": "tool_call",
        }
        for i, path in enumerate([p for p, _ in results] + list(pending))
    ]
    ai = AIMessage(content="", tool_calls=calls, id=ai_id)
    tools = [
        ToolMessage(
            content=content,
            tool_call_id=calls[i]["id"],
            name=READ_FILE.name,
            id=f"{ai_id}-result{i}",
        )
        for i, (_, content) in enumerate(results)
    ]
    return [ai, *tools]
