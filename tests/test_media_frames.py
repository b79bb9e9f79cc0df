"""Reading a sampled window back off its blocks, its one line, its timeline and its contact sheet."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from PIL import Image

from dcode.agent.events import ToolCallFinished, UserMessage
from dcode.agent.stream import StreamTranslator
from dcode.media.attachment import to_reference_block
from dcode.media.contact_sheet import (
    SheetLayout,
    contact_sheet,
    sheet_size,
    strip_frames,
    write_sheet,
)
from dcode.media.frames import bytes_for_route, compact_line, frames_in, timeline, windows_in
from dcode.media.limits import ImageRoute
from dcode.media.store import AttachmentStore
from dcode.media.variants import VariantService
from tests.test_tui_video import window_of


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def test_a_window_is_read_back_from_its_blocks(store: AttachmentStore) -> None:
    blocks = window_of(store, [0.0, 2.0, 4.0], "clips/demo.mp4")
    blocks.append(
        {
            "type": "text",
            "text": "Coverage truncated at t=00:00:04.000: the frame cap was reached. Continue from offset=6.000",
        }
    )
    strip = frames_in(blocks)
    assert strip is not None
    assert (strip.source, strip.name, strip.start, strip.end, strip.continue_at) == (
        "clips/demo.mp4",
        "demo.mp4",
        0.0,
        100.0,
        6.0,
    )
    assert [f.t for f in strip.frames] == [0.0, 2.0, 4.0]
    assert [f.attachment_id for f in strip.frames] == [
        b["attachment_id"] for b in blocks if b.get("type") == "image"
    ]
    assert {(f.width, f.height) for f in strip.frames} == {(640, 360)}


def test_a_prompt_with_text_an_image_and_two_videos(store: AttachmentStore) -> None:
    [pasted] = store.admit([(jpeg((100, 100)), "shot.jpg")])
    first = window_of(store, [0.0, 2.0], "a.mp4")[
        1:
    ]  # a prompt's windows have no read_file summary
    second = window_of(store, [12.0], "b.mp4")[1:]
    content = [
        {"type": "text", "text": "[image 1] [video 1] [video 2] compare"},
        to_reference_block(pasted),
        *first,
        *second,
    ]
    windows = windows_in(content)
    assert [(w.strip.name, len(w.strip.frames), w.first_block, w.end_block) for w in windows] == [
        ("a.mp4", 2, 2, 2 + len(first)),
        ("b.mp4", 1, 2 + len(first), len(content)),
    ]
    [event] = StreamTranslator(None).on_message(HumanMessage(content=content))
    assert isinstance(event, UserMessage)
    # The windows add no text, and the image the prompt names by its label is not marked again.
    assert event.text == "[image 1] [video 1] [video 2] compare"
    assert [strip.name for strip in event.videos] == ["a.mp4", "b.mp4"]


def test_text_that_only_looks_like_a_window_is_none(store: AttachmentStore) -> None:
    assert frames_in("Reading [0.000s, 100.000s) of x.mp4 at 0.5 fps.") is None
    assert (
        frames_in(
            [
                {"type": "text", "text": "Reading [12.000s, 102.000s) of x.mp4 at 0.5 fps."},
                "Frame at t=00:00:12.000",
            ]
        )
        is None
    )
    assert (
        frames_in([{"type": "text", "text": "Reading [0.000s, 100.000s) of x.mp4 at 0.5 fps."}])
        is None
    )
    [att] = store.admit([(jpeg((64, 64)), "x.jpg")])
    assert (
        frames_in([{"type": "text", "text": "look"}, to_reference_block(att)]) is None
    )  # an image, not a frame


def test_a_video_read_result_becomes_an_event_with_its_frames(store: AttachmentStore) -> None:
    blocks = window_of(store, [0.0, 2.0])
    [event] = StreamTranslator(None).on_message(
        ToolMessage(content=blocks, tool_call_id="c1", name="read_file")
    )
    assert isinstance(event, ToolCallFinished) and event.result.frames is not None
    assert [f.t for f in event.result.frames.frames] == [0.0, 2.0]
    assert event.result.text.splitlines() == [
        "Read video clips/demo.mp4: sampled 2 frames.",
        "Reading first 100s of clips/demo.mp4 at 0.5 fps.",
        "Frame at t=00:00:00.000",
        "Frame at t=00:00:02.000",
    ]
    assert "frames" in event.to_json()  # stream-json carries them too


def test_the_line_and_the_timeline(store: AttachmentStore) -> None:
    strip = frames_in(window_of(store, [0.0, 2.0, 4.0]))
    assert strip is not None
    assert compact_line(strip) == "demo.mp4 · 3 frames · 0:00.0–0:04.0"
    assert (
        compact_line(strip, 3 * 1024 + 512) == "demo.mp4 · 3 frames · 0:00.0–0:04.0 · 3.5 KiB sent"
    )
    assert compact_line(strip, 0).endswith("not sent: the model takes no images")
    one = frames_in(window_of(store, [62.5]))
    assert one is not None and compact_line(one) == "demo.mp4 · 1 frame · 1:02.5–1:02.5"
    assert timeline(strip, 9) == "●───●───●  0:00.0 → 0:04.0"
    assert timeline(one, 8) == "●───────  1:02.5 → 1:02.5"


def test_bytes_for_route_are_the_request_variants(store: AttachmentStore) -> None:
    strip = frames_in(window_of(store, [0.0, 2.0]))
    assert strip is not None
    small = ImageRoute(max_pixels=160 * 90, max_bytes=1024 * 1024)
    service = VariantService(store)
    expected = sum(
        service.get_sync(store.get(f.attachment_id), small).byte_size for f in strip.frames
    )
    assert (
        bytes_for_route(strip.frames, small, store) == expected < sum(f.bytes for f in strip.frames)
    )


def test_contact_sheet_size_follows_the_count(store: AttachmentStore, tmp_path: Path) -> None:
    strip = frames_in(window_of(store, [0.0, 2.0, 4.0, 6.0, 8.0]))
    assert strip is not None
    layout = SheetLayout()
    out = tmp_path / "sheet.png"
    assert write_sheet(strip, store, out) == sheet_size(5, 360 / 640, layout)
    with Image.open(out) as sheet:
        assert sheet.format == "PNG"
        assert sheet.size == (4 * 320 + 5 * 6, 2 * (180 + 22) + 3 * 6)
        first = sheet.crop((6, 6, 6 + 320, 6 + 180)).convert("RGB").resize((1, 1)).getpixel((0, 0))
        assert abs(first[2] - 160) < 12  # the first frame's colour, in the first cell
    assert len(strip_frames(strip, store, most=3)) == 3
    with pytest.raises(ValueError, match="a contact sheet needs at least one frame"):
        contact_sheet([])


def jpeg(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (10, 200, 30)).save(buffer, "JPEG")
    return buffer.getvalue()
