"""read_file on a PNG and on a PDF through the whole agent: the scripted model asks for them,
history keeps references only, and the next request carries the image bytes."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
from pathlib import Path

from langchain_core.messages import ToolMessage
from PIL import Image

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.tools.spec import READ_FILE
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.media.attachment import from_reference_block, is_reference_block
from tests.support.model_server import reply, tool_call
from tests.test_media_request import VISION, screenshot
from tests.test_tools_read_media import text_pdf


def images_anywhere(request) -> list[tuple[str, bytes]]:
    """(mime, bytes) of every data-URL image anywhere in a recorded request's body: where the
    request puts a tool result's media (the tool message, a user message after it, a Responses
    function_call_output) is the request projection's business, not read_file's."""
    found: list[tuple[str, bytes]] = []

    def walk(value) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and value.startswith("data:image/"):
            header, data = value.split(",", 1)
            found.append(
                (header.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data))
            )

    walk(request.body)
    return found


async def test_the_model_reads_a_png_then_a_pdf(
    server, make_settings, workspace: Path, api: str
) -> None:
    shot = screenshot(workspace / "shot.png")
    text_pdf(workspace / "doc.pdf", ["Quarterly numbers", "Appendix"])
    settings = make_settings(api, model_overrides={"openai:test-model": VISION})
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "shot.png"})]),
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "doc.pdf"})]),
        reply("Stripes, and a two-page report."),
    )
    out, err = io.StringIO(), io.StringIO()
    request = HeadlessRequest(prompt="look at both", output_format=OutputFormat.STREAM_JSON)
    assert await run_headless(settings, request, out=out, err=err) == 0, err.getvalue()
    # What the transcript shows of a result: its text blocks, one line each.
    finished = [
        e for e in map(json.loads, out.getvalue().splitlines()) if e["type"] == "tool_call_finished"
    ]
    assert [e["output"] for e in finished] == [
        "Read image shot.png (2048x1024).",
        "Read pages 1-2 of doc.pdf (2 pages).\nPage 1\nPage 2",
    ]

    # The request after the PNG read carries it, sized for the route (1 MiB, 640,000 px).
    [(mime, data)] = images_anywhere(server.requests[1])
    with Image.open(io.BytesIO(data)) as sent:
        assert sent.size == (1130, 565) and mime == "image/jpeg"
    # The one after the PDF read carries that image and both rendered pages.
    assert len(images_anywhere(server.requests[2])) == 3

    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=engine.store.latest().id)
        messages = await runner.messages()
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["success", "success"]
    image, pdf = (m.content for m in results)
    assert image[0] == {"type": "text", "text": "Read image shot.png (2048x1024)."}
    assert is_reference_block(image[1]) and from_reference_block(image[1]).name == "shot.png"
    assert pdf[0]["text"] == "Read pages 1-2 of doc.pdf (2 pages)."
    assert [b.get("text") for b in pdf[1::2]] == ["Page 1", "Page 2"]
    assert all(is_reference_block(b) for b in pdf[2::2])
    for block in (*image, *pdf):
        assert "base64" not in block and "image_url" not in block
    conn = sqlite3.connect(settings.sessions_db)
    blob = b"".join(row[0] for row in conn.execute("SELECT checkpoint FROM checkpoints"))
    blob += b"".join(row[0] for row in conn.execute("SELECT value FROM writes") if row[0])
    conn.close()
    assert base64.b64encode(data[:30])[:20] not in blob
    assert base64.b64encode(shot.read_bytes()[:30])[:20] not in blob
