"""The images a served prompt carries: out of the client's attachment store, through the
server's key-value store (a real LangGraph ``InMemoryStore``), into the server's attachment
store, checked on the way in."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore
from PIL import Image

from dcode.media.attachment import to_reference_block
from dcode.media.errors import AdmissionError
from dcode.media.store import AttachmentStore
from dcode.server.carried import NAMESPACE, carry, receive


def _admitted(tmp_path: Path) -> tuple[AttachmentStore, dict[str, object]]:
    shot = tmp_path / "shot.png"
    Image.new("RGBA", (300, 200), (20, 120, 200, 128)).save(shot)
    client = AttachmentStore(tmp_path / "client")
    (attachment,) = client.admit([shot])
    return client, to_reference_block(attachment)


async def test_an_image_carried_is_stored_on_the_server_as_the_client_admitted_it(
    tmp_path: Path,
) -> None:
    client, block = _admitted(tmp_path)
    carried = carry([{"type": "text", "text": "look"}, block], client)
    (key,) = carried
    kv = InMemoryStore()
    await kv.aput(NAMESPACE, key, carried[key])
    server = AttachmentStore(tmp_path / "server")
    assert await receive([key], kv, server) == 1
    attachment = server.get(key)
    assert to_reference_block(attachment) == block  # its original facts too
    assert server.read_bytes(attachment) == client.read_bytes(client.get(key))
    assert await kv.aget(NAMESPACE, key) is None  # taken out
    assert await receive([key], kv, server) == 0  # a second run of the prompt: already here


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (base64.b64encode(b"not the image").decode(), "its bytes are not the image it names"),
        ("%%% not base64", "a carried image is not base64"),
    ],
)
async def test_bytes_that_are_not_the_image_named_are_refused_in_one_line(
    tmp_path: Path, data: str, line: str
) -> None:
    _client, block = _admitted(tmp_path)
    key = str(block["attachment_id"])
    kv = InMemoryStore()
    await kv.aput(NAMESPACE, key, {"block": block, "data": data})
    server = AttachmentStore(tmp_path / "server")
    with pytest.raises((ValueError, AdmissionError)) as refused:
        await receive([key], kv, server)
    assert line in str(refused.value) and "\n" not in str(refused.value)
    assert not server.objects_dir.exists() or not any(server.objects_dir.rglob("*.json"))


async def test_a_re_encoded_image_is_not_taken_for_a_normalized_one(tmp_path: Path) -> None:
    """Bytes whose digest is the id named, but that the server's admission would change."""
    raw = tmp_path / "raw.png"
    Image.new("RGB", (5000, 5000), (1, 2, 3)).save(raw)  # over the normalized size
    data = raw.read_bytes()
    _client, block = _admitted(tmp_path)
    forged = {**block, "attachment_id": hashlib.sha256(data).hexdigest()}
    kv = InMemoryStore()
    await kv.aput(
        NAMESPACE,
        str(forged["attachment_id"]),
        {"block": forged, "data": base64.b64encode(data).decode()},
    )
    with pytest.raises(AdmissionError, match="not a normalized image"):
        await receive([forged["attachment_id"]], kv, AttachmentStore(tmp_path / "server"))
