"""Placement of tool results' media: after the whole batch, once every call has its result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from dcode.agent.media_placement import MOVED_NOTE, PENDING_NOTE, injected_id, place_attachments
from dcode.agent.media_policy import MediaPolicy
from dcode.agent.middleware.media_projection import MediaProjectionMiddleware
from dcode.agent.tools.spec import READ_FILE
from dcode.media.attachment import is_reference_block
from dcode.media.limits import ImageRoute
from dcode.media.modality import media_part
from dcode.media.store import AttachmentStore, Source
from dcode.media.variants import VariantService
from dcode.models.profiles import ModelProfile
from tests.support.media_results import (
    CORPUS_PNGS,
    PILLOW,
    image_result,
    pdf_result,
    read_batch,
    requires_pngs,
    text,
)
from tests.test_media_projection_offload import project

never_stays = lambda attached: False  # noqa: E731


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def three_images(
    store: AttachmentStore, ai_id: str = "ai-1", *, pending: tuple[str, ...] = ()
) -> list[BaseMessage]:
    results = [
        (f"shots/{name}", image_result(store, PILLOW / name, f"shots/{name}"))
        for name in CORPUS_PNGS
    ]
    return [
        HumanMessage(content="look at the shots", id="h-1"),
        *read_batch(ai_id, results, pending=pending),
    ]


def dump(messages: list[BaseMessage]) -> str:
    return json.dumps([m.model_dump() for m in messages], sort_keys=True)


@requires_pngs
def test_three_parallel_reads_give_one_media_message_after_the_three_results(store) -> None:
    messages = three_images(store)
    placed = place_attachments(messages, never_stays)
    assert [type(m).__name__ for m in placed] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    media = placed[-1]
    assert media.id == injected_id("ai-1")
    # In tool-call order, each unit introduced by the call that attached it.
    intros = [b["text"] for b in media.content if b["type"] == "text"]
    assert intros == [f"Attached by {READ_FILE.name} shots/{name}:" for name in CORPUS_PNGS]
    refs = [b for b in media.content if is_reference_block(b)]
    assert [r["attachment_id"] for r in refs] == [
        m.content[1]["attachment_id"] for m in messages[2:5]
    ]
    for original, result in zip(messages[2:5], placed[2:5], strict=True):
        assert result.content == [original.content[0], text(MOVED_NOTE)]
        assert result.tool_call_id == original.tool_call_id
    # The checkpointed messages are untouched; placing a placed list changes nothing.
    assert all(is_reference_block(m.content[1]) for m in messages[2:5])
    assert dump(place_attachments(placed, never_stays)) == dump(placed)
    assert dump(place_attachments(three_images(store), never_stays)) == dump(placed)


@requires_pngs
def test_a_pending_call_blocks_the_injection(store) -> None:
    messages = three_images(store, pending=("shots/slow.png",))
    placed = place_attachments(messages, never_stays)
    assert len(placed) == len(messages) and not any(m.id == injected_id("ai-1") for m in placed)
    for result in placed[2:5]:
        assert result.content[1:] == [text(PENDING_NOTE)]
    assert not any(
        is_reference_block(b) for m in placed for b in m.content if isinstance(m.content, list)
    )
    # The pending call gets its result: the batch's media now follow the last result.
    ai = messages[1]
    late = ToolMessage(
        content="not an image", tool_call_id=ai.tool_calls[3]["id"], name=READ_FILE.name, id="late"
    )
    done = place_attachments([*messages, late], never_stays)
    assert done[-2] is late and done[-1].id == injected_id("ai-1")
    assert sum(is_reference_block(b) for b in done[-1].content) == 3


@requires_pngs
def test_media_the_model_takes_in_tool_results_stay_there(store) -> None:
    messages = three_images(store)
    assert place_attachments(messages, lambda attached: True) is messages


@requires_pngs
def test_each_batch_gets_its_own_message_and_pasted_images_stay(store, tmp_path) -> None:
    pasted = store.admit([Source.from_path(PILLOW / CORPUS_PNGS[0], "mine.png")])[0]
    from dcode.media.attachment import to_reference_block

    first = read_batch("ai-a", [("a.png", image_result(store, PILLOW / CORPUS_PNGS[1], "a.png"))])
    second = read_batch(
        "ai-b",
        [("doc.pdf", pdf_result(store, "doc.pdf")), ("plain.txt", [text("Read plain.txt.")])],
    )
    user = HumanMessage(content=[text("and this one"), to_reference_block(pasted)], id="h-2")
    messages = [*first, AIMessage(content="seen", id="ai-mid"), user, *second]
    placed = place_attachments(messages, never_stays)
    ids = [m.id for m in placed]
    assert ids == [
        "ai-a",
        "ai-a-result0",
        injected_id("ai-a"),
        "ai-mid",
        "h-2",
        "ai-b",
        "ai-b-result0",
        "ai-b-result1",
        injected_id("ai-b"),
    ]
    assert placed[4] is user
    # A result with no media (a text-only list) is not a media result: it keeps its content.
    assert placed[7] is second[2]
    assert [media_part(b).modality for b in placed[8].content if media_part(b)] == ["pdf"]


@requires_pngs
def test_ids_not_text_match_results_to_calls(store) -> None:
    """Two calls on the same path: each result is found by its call id."""
    results = [
        ("same.png", image_result(store, PILLOW / name, "same.png")) for name in CORPUS_PNGS[:2]
    ]
    ai, one, two = read_batch("ai-1", results)
    placed = place_attachments([ai, two, one], never_stays)  # results arrived out of order
    media = placed[-1]
    refs = [b["attachment_id"] for b in media.content if is_reference_block(b)]
    assert refs == [one.content[1]["attachment_id"], two.content[1]["attachment_id"]]


@requires_pngs
async def test_the_middleware_places_then_sends_bytes(store) -> None:
    variants = VariantService(store)
    route = ImageRoute(640_000, 1024 * 1024)
    placed = MediaProjectionMiddleware(
        store, variants, route, policy=MediaPolicy(ModelProfile(image_inputs=True))
    )
    kept = MediaProjectionMiddleware(
        store,
        variants,
        route,
        policy=MediaPolicy(ModelProfile(image_inputs=True, image_tool_message=True)),
    )
    messages = three_images(store)
    sent = await project(placed, messages)
    assert [type(m).__name__ for m in sent][-4:] == ["ToolMessage"] * 3 + ["HumanMessage"]
    assert [b["type"] for b in sent[-1].content].count("image") == 3
    assert not any(b.get("type") == "image" for m in sent[2:5] for b in m.content)
    in_tool = await project(kept, messages)
    assert len(in_tool) == len(messages) and all(
        in_tool[i].content[-1]["type"] == "image" for i in (2, 3, 4)
    )
    # Pending: the batch's images are left out of this request altogether.
    waiting = await project(placed, three_images(store, pending=("slow.png",)))
    assert len(waiting) == 5 and not any(
        b.get("type") == "image" for m in waiting for b in m.content if isinstance(m.content, list)
    )
    assert await project(placed, messages) == sent
    variants.close()


@requires_pngs
async def test_media_left_in_a_result_no_batch_claims_are_scrubbed(store) -> None:
    variants = VariantService(store)
    middleware = MediaProjectionMiddleware(
        store,
        variants,
        ImageRoute(640_000, 1024 * 1024),
        policy=MediaPolicy(ModelProfile(image_inputs=True)),
    )
    _, result = read_batch(
        "ai-gone", [("shots/a.png", image_result(store, PILLOW / CORPUS_PNGS[0], "shots/a.png"))]
    )
    sent = await project(middleware, [HumanMessage(content="hi", id="h"), result])
    assert sent[1].content[1:] == [
        text(
            f"[{READ_FILE.name}: shots/a.png was not attached because this model does not support image content (image/png) in a tool result.]"
        )
    ]
    variants.close()


@requires_pngs
def test_a_frame_window_moves_as_one_unit_in_order(store) -> None:
    frames = [image_result(store, PILLOW / name, "clip.mp4")[1] for name in CORPUS_PNGS[:2]]
    window = [
        text("Read video clip.mp4: sampled 2 frames."),
        text("Reading first 100s of clip.mp4 at 0.5 fps."),
        text("Frame at t=00:00:00.000"),
        frames[0],
        text("Frame at t=00:00:02.000"),
        frames[1],
        text(
            "Coverage truncated at t=4.000s: the frame cap was reached. Continue from offset=4.000"
        ),
    ]
    image = image_result(store, PILLOW / CORPUS_PNGS[2], "b.png")
    placed = place_attachments(
        read_batch("ai-v", [("clip.mp4", window), ("b.png", image)]), never_stays
    )
    assert placed[-1].content == [
        text(f"Attached by {READ_FILE.name} clip.mp4:"),
        *window[1:],
        text(f"Attached by {READ_FILE.name} b.png:"),
        image[1],
    ]
    assert placed[1].content == [window[0], text(MOVED_NOTE)]


async def test_a_damaged_file_attachment_is_a_placeholder(store) -> None:
    variants = VariantService(store)
    middleware = MediaProjectionMiddleware(
        store,
        variants,
        ImageRoute(640_000, 1024 * 1024),
        policy=MediaPolicy(ModelProfile(pdf_inputs=True)),
    )
    _, changed = pdf_result(store, "docs/changed.pdf", pages=1)
    _, broken = pdf_result(store, "docs/broken.pdf", pages=3)
    path = store.path_for(store.get_file(changed["attachment_id"]))
    path.chmod(0o644)
    path.write_bytes(b"%PDF-1.4 not the same bytes")
    sent = await project(
        middleware, [HumanMessage(content=[text("two"), changed, {**broken, "schema": 99}], id="h")]
    )
    assert sent[0].content == [
        text("two"),
        text("[pdf docs/changed.pdf could not be attached: damaged (digest mismatch)]"),
        text("[pdf docs/broken.pdf could not be attached: its reference is damaged]"),
    ]
    variants.close()
