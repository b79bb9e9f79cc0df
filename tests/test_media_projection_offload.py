"""The projection middleware's request-size offload, on real attachments and a real ModelRequest."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from PIL import Image

from dcode.agent.media_policy import MediaPolicy
from dcode.agent.middleware.media_projection import MediaProjectionMiddleware
from dcode.media.attachment import to_reference_block
from dcode.media.limits import ImageRoute
from dcode.media.offload import OffloadLimits, base64_length
from dcode.media.store import AttachmentStore
from dcode.media.variants import VariantService
from dcode.models.profiles import ModelProfile


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def admit_noise(store: AttachmentStore, tmp_path: Path, count: int, side: int = 200) -> list[dict]:
    import os

    blocks = []
    for i in range(count):
        path = tmp_path / f"img{i}.png"
        Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(path)
        blocks.append(to_reference_block(store.admit([path])[0]))
    return blocks


async def project(middleware: MediaProjectionMiddleware, messages: list[HumanMessage]) -> list:
    seen = {}

    async def handler(request):
        seen["messages"] = request.messages
        return "answered"

    request = ModelRequest(model=FakeListChatModel(responses=["x"]), messages=messages)
    assert await middleware.awrap_model_call(request, handler) == "answered"
    return seen["messages"]


def kinds(messages) -> list[str]:
    out = []
    for message in messages:
        for block in message.content if isinstance(message.content, list) else []:
            if block.get("type") == "image":
                out.append("image")
            elif block.get("type") == "text" and "omitted from this request" in block["text"]:
                out.append("dropped")
    return out


async def test_oldest_images_drop_in_whole_steps(store, tmp_path) -> None:
    blocks = admit_noise(store, tmp_path, 9)
    sizes = [base64_length(b["bytes"]) for b in blocks]  # inline images are metered as base64
    limit = sum(sizes[:4])  # about four images fit
    variants = VariantService(store)
    middleware = MediaProjectionMiddleware(
        store,
        variants,
        ImageRoute(1_000_000, 10 * 1024 * 1024),
        policy=MediaPolicy(ModelProfile(image_inputs=True)),
        limits=OffloadLimits(max_bytes=limit),
    )
    messages = [
        HumanMessage(content=[{"type": "text", "text": f"shot {i}"}, block])
        for i, block in enumerate(blocks)
    ]
    projected = await project(middleware, messages)
    result = kinds(projected)
    dropped = result.count("dropped")
    assert result == ["dropped"] * dropped + ["image"] * (9 - dropped)
    assert sum(sizes[dropped:]) <= limit
    # The persisted messages are untouched.
    assert all(m.content[1] == blocks[i] for i, m in enumerate(messages))
    # One more image does not move the dropped prefix unless a whole step is crossed.
    (tmp_path / "more").mkdir()
    more = admit_noise(store, tmp_path / "more", 1)
    projected_again = await project(
        middleware, [*messages, HumanMessage(content=[{"type": "text", "text": "new"}, more[0]])]
    )
    again = kinds(projected_again)
    from dcode.media.offload import plan_offload

    expected = plan_offload(
        [*sizes, base64_length(more[0]["bytes"])], OffloadLimits(max_bytes=limit)
    ).drop
    assert again.count("dropped") == expected and again[-1] == "image"
    assert plan_offload(sizes, OffloadLimits(max_bytes=limit)).drop == dropped
    variants.close()


async def test_count_limit_drops_in_steps_of_twenty(store, tmp_path) -> None:
    blocks = admit_noise(store, tmp_path, 1, side=16) * 45
    variants = VariantService(store)
    middleware = MediaProjectionMiddleware(
        store,
        variants,
        ImageRoute(640_000, 1024 * 1024),
        policy=MediaPolicy(ModelProfile(image_inputs=True)),
        limits=OffloadLimits(max_images=30),
    )
    projected = await project(
        middleware, [HumanMessage(content=[{"type": "text", "text": "many"}, *blocks])]
    )
    result = kinds(projected)
    assert result.count("dropped") == 20 and result.count("image") == 25
    variants.close()


async def test_missing_dropped_image_never_blocks(store, tmp_path) -> None:
    blocks = admit_noise(store, tmp_path, 5)
    gone = store.path_for(store.get(blocks[0]["attachment_id"]))
    gone.chmod(0o644)
    gone.unlink()
    limit = sum(base64_length(b["bytes"]) for b in blocks[1:4])
    variants = VariantService(store)
    middleware = MediaProjectionMiddleware(
        store,
        variants,
        ImageRoute(1_000_000, 10 * 1024 * 1024),
        policy=MediaPolicy(ModelProfile(image_inputs=True)),
        limits=OffloadLimits(max_bytes=limit),
    )
    projected = await project(
        middleware, [HumanMessage(content=[{"type": "text", "text": "x"}, *blocks])]
    )
    result = kinds(projected)
    assert result[0] == "dropped" and "image" in result
    variants.close()
