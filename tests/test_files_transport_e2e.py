"""The Files image transport end to end: the real engine, the real OpenAI client, the scripted
server's Files API, a real SQLite session and real screenshots."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import Notice
from dcode.agent.tools.spec import READ_FILE
from dcode.media.attachment import to_reference_block
from dcode.media.store import AttachmentStore, Source
from dcode.media.uploads.index import Scope, UploadIndex
from dcode.models.user_agent import USER_AGENT
from tests.support.model_server import fault, reply, tool_call

VISION = {"image_inputs": True, "image_max_pixels": 2_000_000, "image_max_bytes": 8 * 1024 * 1024}
FILES = {**VISION, "image_transport": "files"}
INLINE = {**VISION, "image_transport": "inline"}


def noisy_screenshot(path: Path, size: tuple[int, int] = (1400, 900), seed: int = 1) -> Path:
    """A screenshot-sized image that compresses badly, so that its bytes dominate a request."""
    rng = __import__("random").Random(seed)
    image = Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
    image.save(path, "PNG")
    return path


def file_ids(request) -> list[str]:
    """The file ids of the image parts of a recorded request, on either wire."""
    found = []
    for item in request.messages:
        content = item.get("content") if isinstance(item, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "input_image" and "file_id" in block:
                found.append(block["file_id"])
            elif block.get("type") == "file" and isinstance(block.get("file"), dict):
                found.append(block["file"]["file_id"])
    return found


def inline_images(request) -> int:
    count = 0
    for item in request.messages:
        content = item.get("content") if isinstance(item, dict) else None
        for block in content if isinstance(content, list) else []:
            url = block.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            count += isinstance(url, str) and url.startswith("data:")
    return count


async def run_turns(settings, turns: list[list[dict] | str]) -> list:
    """Each turn in one session of one engine; returns every turn's events."""
    out = []
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        for content in turns:
            out.append([e async for e in runner.run_turn(content, prompt_text="turn")])
    return out


def with_image(settings, path: Path, text: str = "look at this") -> list[dict]:
    store = AttachmentStore(settings.attachments_dir)
    attachment = store.admit([Source.from_path(path, path.name)])[0]
    return [{"type": "text", "text": text}, to_reference_block(attachment)]


async def test_three_turns_with_one_screenshot_upload_it_once(
    server, make_settings, workspace: Path
) -> None:
    shot = noisy_screenshot(workspace / "shot.png")
    results = {}
    for transport, profile in (("inline", INLINE), ("files", FILES)):
        settings = make_settings(
            "responses",
            model_overrides={"openai:test-model": profile},
            home=workspace / f"home-{transport}",
        )
        server.script(reply("one"), reply("two"), reply("three"))
        start = len(server.requests)
        turns = await run_turns(settings, [with_image(settings, shot), "and now?", "once more"])
        assert all(not t[-1].is_error for t in turns)
        results[transport] = server.requests[start:]
    files, inline = results["files"], results["inline"]
    assert len(server.files.uploads) == 1
    uploaded = server.files.uploads[0].file_id
    assert [file_ids(r) for r in files] == [[uploaded]] * 3 and all(
        inline_images(r) == 0 for r in files
    )
    assert all(inline_images(r) == 1 and not file_ids(r) for r in inline)
    for sent_inline, sent_files in zip(inline, files, strict=True):
        assert len(sent_inline.raw_body) >= 100 * len(sent_files.raw_body), (
            len(sent_inline.raw_body),
            len(sent_files.raw_body),
        )
    assert {r.headers.get("user-agent") for r in server.files.requests} == {USER_AGENT}
    # The key is nowhere in the index, which is private.
    index = workspace / "home-files" / "uploads.json"
    assert "test-key" not in index.read_text() and oct(os.stat(index).st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("case", ["one named", "two named", "unnamed"])
async def test_a_stale_id_is_uploaded_again_and_the_call_retried_once(
    server, make_settings, workspace: Path, api: str, case: str
) -> None:
    settings = make_settings(api, model_overrides={"openai:test-model": FILES})
    shots = [noisy_screenshot(workspace / f"s{n}.png", (300, 200), n) for n in range(3)]
    server.script(reply("seen"), reply("seen again"))
    content = [
        *with_image(settings, shots[0]),
        with_image(settings, shots[1])[1],
        with_image(settings, shots[2])[1],
    ]
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        first = [e async for e in runner.run_turn(content, prompt_text="three shots")]
        assert not first[-1].is_error
        ids = file_ids(server.requests[-1])
        gone = ids[:2] if case == "two named" else ids[:1]
        for file_id in gone:
            server.files.expire(file_id)
        server.files.name_bad_ids = case != "unnamed"
        calls = len(server.requests)
        second = [e async for e in runner.run_turn("again", prompt_text="again")]
    assert not second[-1].is_error and second[-1].result == "seen again"
    assert len(server.requests) == calls + 2  # the refused call and its one retry
    assert server.requests[calls].refused == "invalid_file_id"
    retried = file_ids(server.requests[-1])
    kept = UploadIndex(settings.home).mappings(Scope.of(server.base_url, "test-key"))
    if case == "unnamed":  # every id the request used is suspect
        assert set(retried).isdisjoint(ids) and len(server.files.uploads) == 6
    else:  # exactly the named ids were replaced
        assert [a == b for a, b in zip(retried, ids, strict=True)] == [i not in gone for i in ids]
        assert len(server.files.uploads) == 3 + len(gone)
    assert {m.file_id for m in kept} == set(retried)


async def test_a_second_file_error_is_the_turns_error_and_there_is_no_third_call(
    server, make_settings, workspace: Path, api: str
) -> None:
    settings = make_settings(api, model_overrides={"openai:test-model": FILES}, max_retries=0)
    shot = noisy_screenshot(workspace / "one.png", (300, 200))
    server.script(fault.file_error(), fault.file_error(), reply("never"))
    turns = await run_turns(settings, [with_image(settings, shot)])
    finished = turns[0][-1]
    assert finished.is_error and "file" in finished.result.lower()
    assert len(server.requests) == 2  # the call and its one retry: no third
    assert (
        UploadIndex(settings.home).mappings(Scope.of(server.base_url, "test-key")) == []
    )  # what it named is cleared
    assert len(server.files.uploads) == 2


async def test_an_upload_failure_sends_the_request_inline(
    server, make_settings, workspace: Path, api: str
) -> None:
    settings = make_settings(api, model_overrides={"openai:test-model": FILES})
    shot = noisy_screenshot(workspace / "one.png", (300, 200))
    server.files.fail_next_upload("error")
    server.script(reply("seen inline"), reply("seen by id"))
    turns = await run_turns(settings, [with_image(settings, shot), "again"])
    assert not turns[0][-1].is_error and turns[0][-1].result == "seen inline"
    assert inline_images(server.requests[0]) == 1 and file_ids(server.requests[0]) == []
    notices = [e.message for e in turns[0] if isinstance(e, Notice)]
    assert any("could not be uploaded" in n and "inline" in n for n in notices)
    assert (
        file_ids(server.requests[1]) and inline_images(server.requests[1]) == 0
    )  # the next request uploads again


async def test_context_counts_a_file_id_image_as_it_counts_an_inline_one(
    server, make_settings, workspace: Path
) -> None:
    shot = noisy_screenshot(workspace / "one.png", (800, 600))
    figures = {}
    for transport, profile in (("inline", INLINE), ("files", FILES)):
        settings = make_settings(
            "responses",
            model_overrides={"openai:test-model": profile},
            home=workspace / f"home-{transport}",
        )
        server.script(reply("ok", usage=(2000, 5)))  # the same reported input: the same calibration
        async with await Engine.open(settings) as engine:
            runner = engine.runner(HeadlessApprover())
            events = [e async for e in runner.run_turn(with_image(settings, shot), prompt_text="x")]
            report = await engine.context_report(events[-1].session_id)
        figures[transport] = {c.name: c.tokens for c in report.categories}
    assert figures["files"]["media"] == figures["inline"]["media"] > 0


async def test_many_screenshots_stay_in_a_files_request_that_inline_would_drop(
    server, make_settings, workspace: Path
) -> None:
    budget = {"request_image_bytes": 600_000}
    shots = [noisy_screenshot(workspace / f"s{n}.png", (300, 300), n) for n in range(6)]
    dropped = {}
    for transport, profile in (("inline", INLINE), ("files", FILES)):
        settings = make_settings(
            "responses",
            model_overrides={"openai:test-model": {**profile, **budget}},
            home=workspace / f"home-{transport}",
        )
        store = AttachmentStore(settings.attachments_dir)
        blocks = [to_reference_block(store.admit([Source.from_path(p, p.name)])[0]) for p in shots]
        server.script(reply("ok"))
        await run_turns(settings, [[{"type": "text", "text": "all"}, *blocks]])
        texts = json.dumps(server.requests[-1].messages)
        dropped[transport] = texts.count("omitted from this request")
    assert dropped["inline"] > 0 and dropped["files"] == 0


async def test_uploads_failing_through_a_tool_loop_give_one_notice(
    server, make_settings, workspace: Path
) -> None:
    settings = make_settings("chat", model_overrides={"openai:test-model": FILES})
    (workspace / "notes.txt").write_text("hello\n")
    shot = noisy_screenshot(workspace / "one.png", (300, 200))
    server.files.fail_next_upload("error", times=None)
    server.script(
        *(
            reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.txt"})])
            for _ in range(2)
        ),
        reply("done"),
    )
    turns = await run_turns(settings, [with_image(settings, shot)])
    assert not turns[0][-1].is_error and all(inline_images(r) == 1 for r in server.requests)
    assert sum("could not be uploaded" in e.message for e in turns[0] if isinstance(e, Notice)) == 1
