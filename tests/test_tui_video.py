"""Video frames in the TUI: the tool widget of a video read, and whether the terminal shows pictures."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from textual import events

from dcode.agent.events import ToolCallFinished, ToolCallRunning, ToolResult
from dcode.agent.media_route import route_for
from dcode.media.attachment import to_reference_block
from dcode.media.contact_sheet import STRIP, sheet_size
from dcode.media.frames import FrameStrip, frames_in, human_bytes
from dcode.media.store import AttachmentStore
from dcode.media.variants import VariantService
from dcode.media.video_text import frame_label, header_text, summary_line
from dcode.tui.graphics import Graphics, asks_terminal, detect, read_answers
from dcode.tui.transcript import UserEntry
from dcode.tui.transcript.video_view import FrameSheet
from tests.support.corpus import VIDEOS, requires_corpus
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_media_fixtures import PROJECT_ROOT
from tests.test_tui_app_media import VISION
from tests.test_tui_app_support import make_settings, running_app


def window_of(
    store: AttachmentStore, times: list[float], source: str = "clips/demo.mp4"
) -> list[dict]:
    """A window's blocks in read_file's shape, over frames admitted into ``store``."""
    blocks: list[dict] = [
        {"type": "text", "text": summary_line(source, len(times))},
        {"type": "text", "text": header_text(source, 0.0, 100.0)},
    ]
    for index, t in enumerate(times):
        buffer = io.BytesIO()
        Image.new("RGB", (640, 360), (40 * index % 256, 90, 160)).save(buffer, "JPEG", quality=85)
        [att] = store.admit([(buffer.getvalue(), f"frame-{index}.jpg")])
        blocks += [{"type": "text", "text": frame_label(t)}, to_reference_block(att)]
    return blocks


CLIP = VIDEOS / "bigbuckbunny.mp4"
requires_clip = requires_corpus(CLIP)


def request_images(request: Any) -> list[bytes]:
    return [
        base64.b64decode(block["image_url"]["url"].split(",", 1)[1])
        for message in request.messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "image_url"
    ]


def request_texts(request: Any) -> list[str]:
    return [
        block["text"]
        for message in request.messages
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "text"
    ]


# --- a [video N] in the prompt


@requires_clip
async def test_a_dropped_video_is_sampled_and_sent_as_its_frames(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    clip = workspace / "bunny.mp4"
    shutil.copyfile(CLIP, clip)
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    async with running_app(
        server, workspace, dcode_home, reply("A rabbit wakes up."), settings=settings
    ) as h:
        h.app.prompt_input.area.post_message(events.Paste(str(clip)))
        await h.until(lambda: "[video 1]" in h.app.prompt_input.text, 10, "the video placeholder")
        await h.type("what happens?")
        await h.press("enter")
        await h.idle(30)
        [request] = server.requests
        images = request_images(request)
        texts = request_texts(request)
        assert len(images) == 3  # 5.3 s at 0.5 fps: t = 0, 2, 4
        assert texts[0] == "[video 1] what happens?"
        assert "Reading first 100s of bunny.mp4 at 0.5 fps." in texts[1]
        assert [t for t in texts if t.startswith("Frame at")] == [
            "Frame at t=00:00:00.000",
            "Frame at t=00:00:02.000",
            "Frame at t=00:00:04.000",
        ]
        [entry] = h.entries(UserEntry)
        [seen] = entry.videos
        assert seen.sent_bytes == sum(
            len(image) for image in images
        )  # what the line says is what went
        line = f"▸ bunny.mp4 · 3 frames · 0:00.0–0:04.0 · {human_bytes(seen.sent_bytes)} sent"
        assert line in h.text()
        assert h.answers() == ["A rabbit wakes up."]


async def test_a_video_that_cannot_be_sampled_is_one_line_and_keeps_the_draft(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    clip = workspace / "broken.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00" * 64)
    async with running_app(server, workspace, dcode_home, reply("never")) as h:
        h.app.prompt_input.area.post_message(events.Paste(str(clip)))
        await h.until(lambda: "[video 1]" in h.app.prompt_input.text, 10, "the video placeholder")
        await h.type("summarise")
        await h.press("enter")
        await h.until(
            lambda: any("broken.mp4" in str(n.message) for n in h.app._notifications),
            15,
            "the toast",
        )
        await h.idle()
        [note] = [str(n.message) for n in h.app._notifications if "broken.mp4" in str(n.message)]
        assert note.startswith("[video 1] broken.mp4 can't be sent: ") and "\n" not in note
        assert h.app.prompt_input.text == "[video 1] summarise"
        assert h.app.prompt_input.area.placeholders.of_kind(
            "media"
        )  # still bound: fix it, send again
        assert server.requests == [] and h.entries(UserEntry) == []


# --- the tool widget


async def test_a_video_read_shows_its_line_and_a_timeline(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    async with running_app(server, workspace, dcode_home, settings=settings) as h:
        store = h.app.media.store
        strip = frames_in(window_of(store, [0.0, 2.0, 4.0, 6.0]))
        assert isinstance(strip, FrameStrip)
        transcript = h.app.transcript
        await transcript.apply(
            ToolCallRunning(
                "call-1", "read_file", {"file_path": "clips/demo.mp4"}, "read_file clips/demo.mp4"
            )
        )
        await transcript.apply(
            ToolCallFinished(
                "call-1",
                "read_file",
                ToolResult("Reading …", frames=strip, preview="Reading [0.000s, …"),
            )
        )
        await h.until(
            lambda: "KiB sent" in h.text() and "0:00.0 0:02.0 0:04.0 0:06.0" in h.text(),
            10,
            "the sheet",
        )
        sheet_lines = [
            line.strip() for line in h.text().splitlines() if "●" in line or "frames ·" in line
        ]
        sent = sum(
            VariantService(store)
            .get_sync(store.get(f.attachment_id), route_for(h.app.engine.resolved.profile))
            .byte_size
            for f in strip.frames
        )
        assert sheet_lines == [
            f"▸ demo.mp4 · 4 frames · 0:00.0–0:06.0 · {human_bytes(sent)} sent",
            f"●{'─' * 12}●{'─' * 12}●{'─' * 12}●  0:00.0 → 0:06.0",
        ]
        [sheet] = h.app.query(FrameSheet)
        assert [type(child).__name__ for child in sheet.children] == [
            "Static",
            "Static",
        ]  # no pictures here


async def test_where_the_terminal_shows_pictures_the_sheet_is_thumbnails(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from textual_image.widget import TGPImage

    async with running_app(server, workspace, dcode_home, graphics=Graphics.KITTY) as h:
        strip = frames_in(window_of(h.app.media.store, [0.0, 2.0, 4.0]))
        assert strip is not None
        await h.app.transcript.apply(
            ToolCallRunning(
                "call-1", "read_file", {"file_path": "clips/demo.mp4"}, "read_file clips/demo.mp4"
            )
        )
        await h.app.transcript.apply(
            ToolCallFinished("call-1", "read_file", ToolResult("", frames=strip))
        )
        await h.until(lambda: h.app.query(TGPImage), 15, "the thumbnails")
        [sheet] = h.app.query(FrameSheet)
        [image] = sheet.query(TGPImage)
        assert image.image.size == sheet_size(3, 360 / 640, STRIP)  # one strip of the three frames
        assert not sheet.query_one(".video-timeline").display
        assert "▸ demo.mp4 · 3 frames" in h.text()


# --- whether the terminal shows pictures


def test_the_terminals_answers_decide_the_protocol() -> None:
    da1_sixel = "\x1b[?62;4;22c"
    da1_plain = "\x1b[?62;22c"
    kitty_ok = "\x1b_Gi=31;OK\x1b\\"
    assert read_answers(da1_sixel) == (Graphics.SIXEL, None)
    assert read_answers(kitty_ok + da1_plain) == (Graphics.KITTY, None)
    assert read_answers(kitty_ok + da1_sixel)[0] is Graphics.SIXEL  # textual-image's order
    assert read_answers(da1_plain) == (Graphics.NONE, None)
    assert read_answers("\x1b[6;20;10t" + da1_plain) == (Graphics.NONE, (10, 20))
    assert read_answers("") == (Graphics.NONE, None)  # a terminal that never answered


def test_tmux_screen_and_pipes_are_not_asked() -> None:
    term = {"TERM": "xterm-256color"}
    assert asks_terminal(term, True, True)
    assert not asks_terminal({**term, "TMUX": "/tmp/tmux-0/default,1,0"}, True, True)
    assert not asks_terminal({"TERM": "screen-256color"}, True, True)
    assert not asks_terminal({**term, "STY": "1.pts"}, True, True)
    assert not asks_terminal({"TERM": "dumb"}, True, True)
    assert not asks_terminal(term, False, True) and not asks_terminal(term, True, False)


def test_the_environment_can_say_what_to_use() -> None:
    assert detect({"DCODE_GRAPHICS": "kitty"}) is Graphics.KITTY
    assert detect({"DCODE_GRAPHICS": "Sixel"}) is Graphics.SIXEL
    assert detect({"DCODE_GRAPHICS": "off", "TERM": "xterm-kitty"}) is Graphics.NONE
    assert detect({"TERM": "xterm"}) is Graphics.NONE  # under pytest stdin is not a terminal


LOAD_PROBE = """
import json, os, sys
from dcode.tui.graphics import Graphics, image_widget
widget = image_widget(Graphics.KITTY)
from textual_image._terminal import get_cell_size
print(json.dumps({"widget": widget.__name__, "cell": list(get_cell_size())}), file=sys.stderr)
"""


def test_textual_image_loads_without_asking_the_terminal() -> None:
    """Imported while Textual owns stdin, textual-image must not send its questions (they would
    race Textual for the answers): on a real terminal, nothing reaches it."""
    leader, follower = os.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-c", LOAD_PROBE],
            stdin=follower, stdout=follower, stderr=subprocess.PIPE, text=True,
            cwd=PROJECT_ROOT, timeout=60, env={**os.environ, "TERM": "xterm-256color"},
        )  # fmt: skip
        os.set_blocking(leader, False)
        try:
            written = os.read(leader, 65536)
        except BlockingIOError:
            written = b""
    finally:
        os.close(follower)
        os.close(leader)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stderr.strip().splitlines()[-1]) == {
        "widget": "TGPImage",
        "cell": [10, 20],
    }
    assert written == b"", written


@pytest.mark.parametrize("graphics", [Graphics.KITTY, Graphics.SIXEL])
def test_the_widget_class_follows_the_protocol(graphics: Graphics) -> None:
    code = (
        "from dcode.tui.graphics import Graphics, image_widget\n"
        "from textual_image import widget\n"
        f"print(image_widget(Graphics({graphics.value!r})) is widget.{'TGPImage' if graphics is Graphics.KITTY else 'SixelImage'})"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "True"
