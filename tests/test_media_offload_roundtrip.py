"""The offload placeholder's promise: an image dropped for size comes back through read_file.

A session holds 601 images, one over the count cap, so the oldest 20 go out of the request as
placeholders naming their store path. The scripted model then calls read_file on the first
one's path, and the next request carries that image again, after the tool result.
"""

from __future__ import annotations

import io
import re

from PIL import Image

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.tools.spec import READ_FILE
from dcode.media.attachment import to_reference_block
from dcode.media.store import AttachmentStore, Source
from tests.support.model_server import reply, tool_call
from tests.test_media_request import request_texts, screenshot, sent_images

VISION = {"image_inputs": True, "image_max_pixels": 640_000, "image_max_bytes": 1024 * 1024}


async def test_a_dropped_image_is_read_back_with_read_file(
    server, make_settings, workspace, api
) -> None:
    settings = make_settings(api, model_overrides={"openai:test-model": VISION})
    store = AttachmentStore(settings.attachments_dir)
    first = store.admit(
        [Source.from_path(screenshot(workspace / "first.png", (320, 200), seed=90), "first.png")]
    )[0]
    tiny = Image.new("RGB", (8, 8), (0, 200, 0))
    buffer = io.BytesIO()
    tiny.save(buffer, "PNG")
    filler = store.admit([Source.from_bytes(buffer.getvalue(), "dot.png")])[0]
    content = [
        {"type": "text", "text": "all of these"},
        to_reference_block(first),
        *[to_reference_block(filler)] * 600,
    ]
    path = str(store.path_for(first))
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": path}, call_id="call_back")]),
        reply("I see it again."),
    )
    async with await Engine.open(settings) as engine:
        events = [
            e
            async for e in engine.runner(HeadlessApprover()).run_turn(
                content, prompt_text="all of these"
            )
        ]
    assert not events[-1].is_error
    dropped = [t for t in request_texts(server.requests[0]) if "omitted from this request" in t]
    assert len(dropped) == 20 and dropped[0].startswith("[image first.png (320x200) omitted")
    assert re.search(rf"call {READ_FILE.name} with file_path={re.escape(path)}\]$", dropped[0])
    back = server.requests[1]
    with Image.open(io.BytesIO(sent_images(back)[-1][1])) as image:
        assert image.size == (320, 200)
    assert len(sent_images(back)) == len(sent_images(server.requests[0])) + 1
