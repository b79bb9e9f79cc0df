"""The attachment store: all-or-nothing admission, dedup, atomic writes, reference blocks."""

from __future__ import annotations

import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dcode.media.attachment import (
    Attachment,
    InvalidReferenceBlock,
    OriginalFacts,
    from_reference_block,
    is_reference_block,
    to_reference_block,
)
from dcode.media.errors import AdmissionError, AttachmentUnavailableError, RejectReason
from dcode.media.limits import AdmissionLimits
from dcode.media.store import AttachmentStore, Source
from tests.test_media_fixtures import encode, gradient, noise


def png(size: tuple[int, int] = (64, 48)) -> bytes:
    return encode(gradient(size), "PNG")


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def test_admit_mixed_sources_in_order(store: AttachmentStore, tmp_path: Path) -> None:
    on_disk = tmp_path / "shot one.png"
    on_disk.write_bytes(png((30, 20)))
    atts = store.admit(
        [Source.from_path(on_disk), (encode(gradient((10, 10)), "JPEG"), "paste.jpg"), on_disk]
    )
    assert [a.name for a in atts] == ["shot one.png", "paste.jpg", "shot one.png"]
    assert atts[0].id == atts[2].id  # dedup
    assert atts[0].passthrough and store.read_bytes(atts[0]) == on_disk.read_bytes()
    objects = [p for p in files_under(store.objects_dir) if p.suffix != ".json"]
    assert len(objects) == 2
    for path in objects:
        assert stat.S_IMODE(path.stat().st_mode) == 0o400


def test_dedup_stores_once_and_repairs_damage(store: AttachmentStore) -> None:
    [first] = store.admit([(png(), "a.png")])
    path = store.path_for(first)
    os.chmod(path, 0o644)
    path.write_bytes(b"damaged")
    with pytest.raises(AttachmentUnavailableError, match="digest"):
        store.read_bytes(first)
    [again] = store.admit([(png(), "b.png")])
    assert again.id == first.id and store.read_bytes(again) == png()
    assert len([p for p in files_under(store.objects_dir) if p.suffix == ".png"]) == 1


def test_a_batch_is_all_or_nothing(store: AttachmentStore) -> None:
    sources = [(png(), "good.png"), (b"not an image at all", "notes.txt"), (b"", "empty.png")]
    with pytest.raises(AdmissionError) as info:
        store.admit(sources)
    error = info.value
    assert error.name == "notes.txt" and error.reason is RejectReason.UNSUPPORTED_TYPE
    assert [r.name for r in error.rejections] == ["notes.txt", "empty.png"]
    assert "notes.txt" in str(error) and "empty.png" in str(error)
    assert not store.root.exists() or files_under(store.root) == []


def test_message_limits(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path, AdmissionLimits(max_images_per_message=2))
    with pytest.raises(AdmissionError) as info:
        store.admit([(png(), f"{i}.png") for i in range(3)])
    assert info.value.reason is RejectReason.TOO_MANY_IMAGES

    data = png()
    store = AttachmentStore(tmp_path, AdmissionLimits(max_message_source_bytes=2 * len(data)))
    with pytest.raises(AdmissionError) as info:
        store.admit([(data, "1.png"), (data, "2.png"), (data, "3.png")])
    assert info.value.reason is RejectReason.MESSAGE_TOO_LARGE


def test_twenty_images_per_message_by_default(store: AttachmentStore) -> None:
    many = [(encode(gradient((8 + i, 8)), "PNG"), f"{i}.png") for i in range(21)]
    with pytest.raises(AdmissionError):
        store.admit(many)
    assert len(store.admit(many[:20])) == 20


def test_unreadable_and_oversized_paths(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path / "s", AdmissionLimits(max_source_bytes=1000))
    big = tmp_path / "big.png"
    big.write_bytes(encode(noise((100, 100)), "PNG"))
    for source, reason in [
        (tmp_path / "missing.png", RejectReason.UNREADABLE),
        (tmp_path, RejectReason.UNREADABLE),
        (big, RejectReason.TOO_MANY_BYTES),
    ]:
        with pytest.raises(AdmissionError) as info:
            store.admit([source])
        assert info.value.reason is reason, source


def test_get_and_read_back(store: AttachmentStore) -> None:
    [att] = store.admit([(encode(noise((300, 200)), "PNG"), "noise.png")])
    assert store.get(att.id) == att
    assert store.contains(att)
    store.path_for(att).unlink()
    with pytest.raises(AttachmentUnavailableError, match="missing"):
        store.read_bytes(att)
    with pytest.raises(AttachmentUnavailableError):
        store.get("0" * 64)
    with pytest.raises(AttachmentUnavailableError):
        store.get("../../etc/passwd")


def test_writes_are_atomic(store: AttachmentStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        store.admit([(png(), "a.png")])
    assert files_under(store.root) == []  # no final file, no temporary left behind


def test_concurrent_admission_of_the_same_image(store: AttachmentStore) -> None:
    data = encode(noise((200, 200)), "PNG")
    with ThreadPoolExecutor(4) as pool:
        ids = {a[0].id for a in pool.map(lambda i: store.admit([(data, f"{i}.png")]), range(8))}
    assert len(ids) == 1
    names = [p.name for p in files_under(store.root)]
    assert not any(n.startswith(".tmp-") for n in names)


# -- reference blocks ----------------------------------------------------------------------------


def test_reference_block_round_trip_and_size(store: AttachmentStore) -> None:
    [att] = store.admit([(encode(noise((500, 400)), "PNG"), "x" * 5000 + ".png")])
    block = to_reference_block(att)
    text = json.dumps(block)
    assert len(text.encode()) < 2048
    assert "base64" not in text and "data" not in block
    assert is_reference_block(block)
    assert from_reference_block(json.loads(text)) == att
    assert len(att.name) <= 255


def _block() -> dict[str, object]:
    att = Attachment(
        id="a" * 64,
        media_type="image/jpeg",
        width=10,
        height=20,
        byte_size=300,
        alpha=False,
        name="n.png",
        original=OriginalFacts("PNG", 10, 20, 400),
    )
    return to_reference_block(att)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.update(attachment_id="../../../../etc/passwd"),
        lambda b: b.update(attachment_id="A" * 64),
        lambda b: b.update(width="10"),
        lambda b: b.update(width=0),
        lambda b: b.update(alpha=1),
        lambda b: b.update(mime_type="image/gif"),
        lambda b: b.update(schema=99),
        lambda b: b.pop("original"),
        lambda b: b.pop("height"),
        lambda b: b.update(source_type="base64"),
    ],
)
def test_malformed_reference_blocks_are_refused(mutate: object) -> None:
    block = _block()
    assert callable(mutate)
    mutate(block)
    with pytest.raises(InvalidReferenceBlock):
        from_reference_block(block)


def test_reference_blocks_live_in_langchain_messages() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    block = _block()
    msg = messages.HumanMessage(content=[{"type": "text", "text": "look"}, block])
    dumped = json.dumps(msg.model_dump())
    assert len(dumped) < 2048
    assert any(is_reference_block(b) for b in msg.content_blocks)


@pytest.mark.parametrize("alpha", [False, True])
def test_re_admitting_a_stored_attachment_is_idempotent(
    store: AttachmentStore, alpha: bool
) -> None:
    # read_file on an attachment's read-only path admits it again: same bytes, same id.
    im = gradient((3000, 2000))  # over the 2048² box: normalization must re-encode it
    if alpha:
        im.putalpha(gradient((3000, 2000)).getchannel("G"))
    [att] = store.admit([(encode(im, "PNG"), "big.png")])
    assert not att.passthrough and att.media_type == ("image/webp" if alpha else "image/jpeg")
    [again] = store.admit([store.path_for(att)])
    assert again.id == att.id and again.passthrough
