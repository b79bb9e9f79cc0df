"""Media through a summary: the summarized part's media become tags naming their files, which
the summarizer is shown, the archive keeps, and read_file opens again after the cut."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from PIL import Image

from dcode.agent.approval import HeadlessApprover
from dcode.agent.compaction.summary import archive_section, transcript_for_summary
from dcode.agent.engine import Engine
from dcode.agent.events import CompactionFinished, CompactionStarted
from dcode.agent.media_tags import FAILED, media_tag, tag_media
from dcode.agent.session_files import HISTORY_DIR
from dcode.agent.tools.spec import READ_FILE
from dcode.cli.headless import HeadlessRequest
from dcode.cli.headless_media import attach_images
from dcode.media.attachment import from_reference_block, is_reference_block
from dcode.media.store import AttachmentStore
from tests.support.media_results import (
    PILLOW,
    audio_result,
    image_result,
    pdf_result,
    read_batch,
    requires_pngs,
)
from tests.support.model_server import reply, tool_call
from tests.test_agent_summarization import ONE, TWO
from tests.test_media_request import VISION, screenshot
from tests.test_tools_read_media_e2e import images_anywhere


def image_tag(path: str) -> str:
    return f'<image url="{path}"/>'


def stored_objects(store: AttachmentStore) -> set[Path]:
    return {p for p in store.objects_dir.rglob("*") if p.is_file()}


async def turn(runner, content) -> None:  # a SessionRunner
    async for _ in runner.run_turn(content):
        pass


async def test_an_image_before_the_cut_is_still_readable_after_it(
    server, make_settings, workspace: Path, dcode_home: Path, api: str
) -> None:
    settings = make_settings(api, model_overrides={"openai:test-model": VISION})
    pasted = screenshot(workspace / "pasted.png", (600, 300))
    screenshot(workspace / "read.png", seed=7)
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "read.png"})]),
        reply(ONE),
        reply(TWO),
    )
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        store = engine.attachments
        # The user attaches one image (as `dcode -p -i` does); the model reads another.
        await turn(
            runner,
            attach_images(
                settings, HeadlessRequest(prompt="what is wrong here?"), [pasted]
            ).content,
        )
        await turn(runner, "second")
        saved = await runner.messages()
        [pasted_ref] = [b for b in saved[0].content if is_reference_block(b)]
        [read_ref] = [
            b
            for m in saved
            if isinstance(m, ToolMessage)
            for b in m.content
            if is_reference_block(b)
        ]
        pasted_path, read_path = (
            str(store.path_for(from_reference_block(b))) for b in (pasted_ref, read_ref)
        )

        summary = f"SUMMARY: the user attached {image_tag(pasted_path)}; the agent read read.png, {image_tag(read_path)}."
        server.script(reply(summary))
        objects = stored_objects(store)
        events = await runner.compact()
        assert [type(e) for e in events] == [CompactionStarted, CompactionFinished]
        assert (
            stored_objects(store) == objects
        )  # the tags name the stored copies: nothing new written

        # The summarizer is told about the tags and shown them, never the pixels.
        summarizer = server.requests[3]
        system, transcript = (text for _, text in summarizer.transcript())
        assert 'error="failed_to_offload"' in system and "read_file" in system
        assert image_tag(pasted_path) in transcript and image_tag(read_path) in transcript
        assert images_anywhere(summarizer) == []
        archive = (dcode_home / HISTORY_DIR / f"{runner.session_id}.md").read_text()
        assert (
            archive.count(image_tag(pasted_path)) == 1 and archive.count(image_tag(read_path)) == 1
        )

        # After the cut, the model opens the pasted image again by the path the summary kept.
        server.script(
            reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": pasted_path})]),
            reply("The same stripes."),
        )
        await turn(runner, "look at my screenshot again")
        after = server.transcript(4)
        assert (
            image_tag(pasted_path) in after[1][1] and "media tags" in after[1][1]
        )  # and it is told it may open it
        assert images_anywhere(server.requests[4]) == []  # the images before the cut are summarized
        [(_, data)] = images_anywhere(server.requests[5])
        with Image.open(io.BytesIO(data)) as sent, Image.open(pasted) as original:
            assert (
                sent.convert("RGB").tobytes() == original.convert("RGB").tobytes()
            )  # the pasted one, whole
        [reread] = [b for b in (await runner.messages())[-2].content if is_reference_block(b)]
        assert (
            reread["attachment_id"] == pasted_ref["attachment_id"]
            and stored_objects(store) == objects
        )  # re-admitted nothing


@requires_pngs
def test_every_kind_of_media_part_becomes_one_tag(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path / "attachments")
    png = (PILLOW / "7x13.png").read_bytes()
    inline = {"type": "image", "base64": base64.b64encode(png).decode(), "mime_type": "image/png"}
    data_url = {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()},
    }
    corrupt = {
        "type": "image",
        "base64": base64.b64encode(b"not an image at all").decode(),
        "mime_type": "image/png",
    }
    remote = {"type": "image", "url": "https://example.com/diagram.png"}
    messages = [
        HumanMessage(
            content=[
                {"type": "text", "text": "see"},
                inline,
                data_url,
                corrupt,
                remote,
                {"type": "image", "base64": "%%%"},
            ]
        ),
        *read_batch(
            "ai1",
            [
                ("a.png", image_result(store, PILLOW / "1_trns.png", "a.png")),
                ("doc.pdf", pdf_result(store, "doc.pdf")),
                ("clip.wav", audio_result(store, "clip.wav")),
            ],
        ),
        AIMessage(content="done"),
    ]
    objects = stored_objects(store)
    tagged = tag_media(messages, store)
    assert tagged.failed == 2  # the bytes that are no image, and the base64 that is none
    new = stored_objects(store) - objects
    assert (
        len([p for p in new if p.suffix != ".json"]) == 1
    )  # the inline PNG, once: both of its blocks name it
    [inline_path] = [str(p) for p in new if p.suffix != ".json"]
    human = transcript_for_summary(tagged.messages[:1])
    assert human == (
        f"[human]\nsee\n{image_tag(inline_path)}\n{image_tag(inline_path)}\n{media_tag('image', None)}\n"
        f'<image url="https://example.com/diagram.png"/>\n<image error="{FAILED}"/>'
    )
    image, pdf, audio = (m.content for m in messages[2:5])
    section = archive_section(tagged.messages)
    assert (
        f'<message type="tool">{image[0]["text"]}\n{image_tag(str(store.path_for(from_reference_block(image[1]))))}</message>'
        in section
    )
    assert (
        f'<file url="{store.objects_dir}/{pdf[1]["attachment_id"][:2]}/{pdf[1]["attachment_id"]}.pdf" mime="application/pdf"/>'
        in section
    )
    assert (
        f'<audio url="{store.objects_dir}/{audio[1]["attachment_id"][:2]}/{audio[1]["attachment_id"]}.wav"/>'
        in section
    )
    assert messages[0].content[1] == inline and is_reference_block(
        messages[2].content[1]
    )  # the history keeps its blocks


@requires_pngs
def test_without_the_stored_copy_a_reference_is_marked_lost(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path / "attachments")
    result = image_result(store, PILLOW / "7x13.png", "gone.png")
    gone = store.path_for(from_reference_block(result[1]))
    gone.chmod(0o600)
    gone.unlink()
    tagged = tag_media(read_batch("ai1", [("gone.png", result)]), store)
    assert tagged.failed == 1 and transcript_for_summary(tagged.messages).endswith(
        f'<image error="{FAILED}"/>'
    )
    assert (
        tag_media(
            read_batch("ai2", [("a.png", image_result(store, PILLOW / "a_fli.png", "a.png"))]), None
        ).failed
        == 1
    )


async def test_an_image_gone_from_the_store_is_summarized_as_lost_with_a_notice(
    server, make_settings, workspace: Path, dcode_home: Path
) -> None:
    from dcode.agent.events import Notice

    settings = make_settings(model_overrides={"openai:test-model": VISION})
    server.script(reply(ONE), reply(TWO), reply("SUMMARY: an attached image was lost."))
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        await turn(
            runner,
            attach_images(
                settings,
                HeadlessRequest(prompt="what is wrong here?"),
                [screenshot(workspace / "shot.png", (300, 200))],
            ).content,
        )
        await turn(runner, "second")
        [ref] = [b for b in (await runner.messages())[0].content if is_reference_block(b)]
        gone = engine.attachments.path_for(from_reference_block(ref))
        gone.chmod(0o600)
        gone.unlink()
        events = await runner.compact()
    assert [type(e) for e in events] == [CompactionStarted, Notice, CompactionFinished]
    assert events[1].message.startswith(
        "1 media part(s) of the summarized messages could not be kept"
    )
    lost = f'<image error="{FAILED}"/>'
    assert lost in server.transcript(2)[1][1] and str(gone) not in server.transcript(2)[1][1]
    assert lost in (dcode_home / HISTORY_DIR / f"{runner.session_id}.md").read_text()
