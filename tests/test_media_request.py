"""Images from admission to the wire: reference blocks in history, route-sized bytes per request."""

from __future__ import annotations

import base64
import io
import sqlite3
from pathlib import Path

import pytest
from PIL import Image

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import Notice
from dcode.cli.headless import HeadlessRequest, run_headless
from dcode.cli.headless_media import attach_images
from dcode.media.attachment import is_reference_block, to_reference_block
from dcode.media.store import AttachmentStore
from dcode.prompts.mentions import mentions
from tests.support.model_server import reply

VISION = {"image_inputs": True, "image_max_pixels": 640_000, "image_max_bytes": 1024 * 1024}


def screenshot(path: Path, size: tuple[int, int] = (2048, 1024), seed: int = 0) -> Path:
    image = Image.new("RGB", size, (30 + seed, 30, 40))
    for x in range(0, size[0], 64):
        image.paste((200, 100 + (x + seed) % 100, 50), (x, 0, x + 32, size[1] // 2))
    image.save(path, "PNG")
    return path


def sent_images(request) -> list[tuple[str, bytes]]:
    """(mime, bytes) of every image in a recorded request, whichever wire it used."""
    found = []
    for item in request.messages:
        content = item.get("content") if isinstance(item, dict) else None
        for block in content if isinstance(content, list) else []:
            url = None
            if block.get("type") == "image_url":
                url = block["image_url"]["url"]
            elif block.get("type") == "input_image":
                url = block["image_url"]
            if url:
                header, data = url.split(",", 1)
                found.append(
                    (header.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data))
                )
    return found


def request_texts(request) -> list[str]:
    """Every text part sent (a message of text parts alone goes as one string, a line apart)."""
    texts = []
    for item in request.messages:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            texts += content.split("\n")
        for block in content if isinstance(content, list) else []:
            if block.get("type") in {"text", "input_text"}:
                texts.append(block["text"])
    return texts


async def test_headless_image_reaches_the_wire_sized_for_the_route(
    server, make_settings, workspace, api
) -> None:
    shot = screenshot(workspace / "shot.png")
    settings = make_settings(api, model_overrides={"openai:test-model": VISION})
    server.script(reply("I see stripes."))
    request = attach_images(settings, HeadlessRequest(prompt="what is in [image 1]?"), [shot])
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(settings, request, out=out, err=err) == 0, err.getvalue()
    images = sent_images(server.requests[0])
    assert len(images) == 1
    mime, data = images[0]
    with Image.open(io.BytesIO(data)) as sent:
        assert sent.size == (1130, 565) and mime == "image/jpeg"
    assert len(data) <= 1024 * 1024
    texts = request_texts(server.requests[0])
    handle = next(t for t in texts if t.startswith("[image shot.png"))
    assert "sent as 1130x565 image/jpeg" in handle and "stored 2048x1024" in handle
    assert texts.index(handle) == texts.index("what is in [image 1]?") + 1
    if api == "chat":
        assert server.requests[0].messages[-1]["content"][-1]["type"] == "image_url"
    else:
        assert any(
            b.get("type") == "input_image" for b in server.requests[0].messages[-1]["content"]
        )


async def test_history_holds_references_only(server, make_settings, workspace) -> None:
    settings = make_settings("chat", model_overrides={"openai:test-model": VISION})
    server.script(reply("ok"))
    shot = screenshot(workspace / "shot.png")
    request = attach_images(settings, HeadlessRequest(prompt="look"), [shot])
    await run_headless(settings, request, out=io.StringIO(), err=io.StringIO())
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=engine.store.latest().id)
        messages = await runner.messages()
    blocks = [b for b in messages[0].content if isinstance(b, dict)]
    assert any(is_reference_block(b) for b in blocks)
    assert all("base64" not in b and "image_url" not in b for b in blocks)
    conn = sqlite3.connect(settings.sessions_db)
    blob = b"".join(row[0] for row in conn.execute("SELECT checkpoint FROM checkpoints"))
    blob += b"".join(row[0] for row in conn.execute("SELECT value FROM writes") if row[0])
    conn.close()
    assert base64.b64encode(shot.read_bytes()[:30])[:20] not in blob


async def test_model_without_images_gets_placeholders_and_one_notice(
    server, make_settings, workspace, api
) -> None:
    settings = make_settings(api, model_overrides={"openai:test-model": {"image_inputs": False}})
    server.script(reply("first"), reply("second"))
    store = AttachmentStore(settings.attachments_dir)
    block = to_reference_block(store.admit([screenshot(workspace / "a.png")])[0])
    notices = []
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        for prompt in ("one", "two"):
            async for event in runner.run_turn(
                [{"type": "text", "text": prompt}, block], prompt_text=prompt
            ):
                if isinstance(event, Notice):
                    notices.append(event.message)
    assert sent_images(server.requests[1]) == []
    assert (
        request_texts(server.requests[1]).count(
            "[a.png was not attached because this model does not support image content (image/png).]"
        )
        == 2
    )
    assert notices == ["this model takes no images: they are sent as text placeholders"]


async def test_missing_attachment_becomes_placeholder(server, make_settings, workspace) -> None:
    settings = make_settings("chat", model_overrides={"openai:test-model": VISION})
    store = AttachmentStore(settings.attachments_dir)
    att = store.admit([screenshot(workspace / "gone.png", (300, 200))])[0]
    store.path_for(att).chmod(0o644)
    store.path_for(att).unlink()
    server.script(reply("fine"))
    async with await Engine.open(settings) as engine:
        events = [
            e
            async for e in engine.runner(HeadlessApprover()).run_turn(
                [{"type": "text", "text": "x"}, to_reference_block(att)]
            )
        ]
    assert not events[-1].is_error
    assert any(
        t.startswith("[image gone.png could not be attached")
        for t in request_texts(server.requests[0])
    )


async def test_checkpoint_growth_per_image_is_small(server, make_settings, workspace) -> None:
    """20 pasted screenshots grow the session's latest checkpoint by at most 2 KB each."""
    settings = make_settings("chat", model_overrides={"openai:test-model": VISION})
    store = AttachmentStore(settings.attachments_dir)
    blocks = [
        to_reference_block(a)
        for a in store.admit(
            [screenshot(workspace / f"s{i}.png", (1600, 900), i) for i in range(20)]
        )
    ]
    sizes = {}
    async with await Engine.open(settings) as engine:
        for label, with_images in (("plain", False), ("images", True)):
            server.script(*[reply("ok")] * 20)
            runner = engine.runner(HeadlessApprover())
            for i in range(20):
                content = [
                    {"type": "text", "text": f"turn {i}"},
                    *([blocks[i]] if with_images else []),
                ]
                async for _ in runner.run_turn(content, prompt_text=f"turn {i}"):
                    pass
            saved = await engine.checkpointer.aget_tuple(runner.config)
            _, payload = engine.checkpointer.serde.dumps_typed(saved.checkpoint)
            sizes[label] = len(payload)
    growth = (sizes["images"] - sizes["plain"]) / 20
    print("checkpoint sizes", sizes, "growth per image", growth)
    assert 0 < growth <= 2048, sizes


def test_mentions_and_an_unreadable_video(make_settings, workspace) -> None:
    settings = make_settings("chat")
    screenshot(workspace / "my shot.png", (64, 64))
    (workspace / "notes.txt").write_text("hi")
    prompt = r"compare @my\ shot.png with @notes.txt and @missing.png"
    assert mentions(prompt) == ["my shot.png", "notes.txt", "missing.png"]
    video = workspace / "clip.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    from dcode.settings.config import ConfigError

    with pytest.raises(ConfigError, match=r"^clip\.mp4 can't be sent: "):
        attach_images(settings, HeadlessRequest(prompt="x"), [video])
    corrupt = workspace / "bad.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    with pytest.raises(ConfigError, match=r"bad\.png"):
        attach_images(settings, HeadlessRequest(prompt="x"), [workspace / "my shot.png", corrupt])
    assert not (settings.attachments_dir / "objects").exists() or not any(
        (settings.attachments_dir / "objects").rglob("*.jpg")
    )


def test_cli_image_flag_and_errors(server, workspace, tmp_path) -> None:
    import os
    import subprocess
    import sys

    home = tmp_path / "clihome"
    home.mkdir()
    (home / "config.toml").write_text(
        '[models."openai:test-model"]\nimage_inputs = true\nimage_max_pixels = 640000\nimage_max_bytes = 1048576\n'
    )
    screenshot(workspace / "ui.png")
    env = {"PATH": os.environ["PATH"], "DCODE_HOME": str(home), "OPENAI_API_KEY": "k"}
    dcode = str(Path(sys.executable).with_name("dcode"))
    base = [dcode, "-p", "what is this?", "-m", "openai:test-model", "--base-url", server.base_url]
    server.script(reply("a striped UI"))
    ok = subprocess.run(
        [*base, "-i", "ui.png"], cwd=workspace, env=env, capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "a striped UI" and len(sent_images(server.requests[0])) == 1
    (workspace / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    bad = subprocess.run(
        [*base, "-i", "broken.png"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        bad.returncode == 1
        and len(bad.stderr.strip().splitlines()) == 1
        and "broken.png" in bad.stderr
    )
    assert len(server.requests) == 1
    server.script(reply("the same UI"))
    mentioned = subprocess.run(
        [*base[:2], "what is @ui.png showing?", *base[3:]],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert mentioned.returncode == 0, mentioned.stderr
    assert mentioned.stdout.strip() == "the same UI" and len(sent_images(server.requests[1])) == 1


def test_typescript_is_not_a_video(tmp_path) -> None:
    from dcode.media.kinds import detect_media_kind

    source = tmp_path / "app.ts"
    source.write_text("export const x: number = 1;\n")
    assert detect_media_kind(source) is None
    stream = tmp_path / "clip.ts"
    stream.write_bytes((b"\x47" + b"\x00" * 187) * 3)
    assert detect_media_kind(stream) == "video"
