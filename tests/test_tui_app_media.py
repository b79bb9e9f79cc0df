"""Images through the whole app: a dropped path becomes [image 1] and reaches the model."""

from __future__ import annotations

import base64
import io
from dataclasses import replace
from pathlib import Path

from PIL import Image
from textual import events

from dcode.agent.store import open_store
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import make_settings, running_app

VISION = {"image_inputs": True, "image_max_pixels": 640_000, "image_max_bytes": 1024 * 1024}


def sent_images(request) -> list[bytes]:
    out = []
    for message in request.messages:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "image_url":
                out.append(base64.b64decode(block["image_url"]["url"].split(",", 1)[1]))
    return out


async def test_dropped_screenshot_is_sent_sized_for_the_route(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    shot = workspace / "Screen Shot.png"
    Image.new("RGB", (2048, 2048), (20, 120, 200)).save(shot)
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    async with running_app(
        server, workspace, dcode_home, reply("A blue square."), settings=settings
    ) as h:
        area = h.app.prompt_input.area
        area.post_message(events.Paste(f"'{shot}'"))
        await h.until(lambda: "[image 1]" in h.app.prompt_input.text, 10, "the image placeholder")
        await h.type("what is this?")
        await h.press("enter")
        await h.idle()
        images = sent_images(server.requests[0])
        assert len(images) == 1
        with Image.open(io.BytesIO(images[0])) as sent:
            assert sent.size == (800, 800)
        user_text = next(t for r, t in server.requests[0].transcript() if r == "user")
        assert "[image 1]" in user_text and "what is this?" in user_text
        assert h.answers() == ["A blue square."]
    info = open_store(settings).latest()
    assert info is not None and "what is this?" in info.title


async def test_corrupt_image_toasts_and_keeps_the_draft(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    bad = workspace / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    async with running_app(server, workspace, dcode_home) as h:
        await h.type("keep this text ")
        h.app.prompt_input.area.post_message(events.Paste(str(bad)))
        await h.until(
            lambda: any("broken.png" in str(n.message) for n in h.app._notifications),
            10,
            "the toast",
        )
        assert "keep this text" in h.app.prompt_input.text
        assert "[image" not in h.app.prompt_input.text
        assert server.requests == []
