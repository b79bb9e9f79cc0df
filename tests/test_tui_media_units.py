"""The media tracker's parts that need no running app: the pre-check, kinds, content, history."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from dcode.media.store import AttachmentStore
from dcode.tui.widgets.media_content import MediaRefused, build_content, content_for
from dcode.tui.widgets.media_source import (
    MEDIA_KIND,
    PENDING_MESSAGE,
    MediaItem,
    MediaSource,
    PendingMedia,
    _media_kind,
    might_name_media,
)
from dcode.tui.widgets.placeholders import Draft, Placeholder

MP4_HEAD = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00" * 64


@dataclass
class Sent:
    text: str
    placeholders: tuple[Placeholder, ...] = ()


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def admitted(store: AttachmentStore, tmp_path: Path, name: str = "shot.png", colour=(9, 9, 9)):
    path = tmp_path / name
    Image.new("RGB", (32, 24), colour).save(path)
    return store.admit([path])[0]


@pytest.mark.parametrize(
    "text",
    [
        "/tmp/shot.png",
        "'/home/me/My Shot.PNG'",
        "C:\\Users\\me\\shot.jpeg",
        "file:///tmp/a%20b.webp",
        "/tmp/screenshot-without-extension",
        "~/clip.mov what happens here?",
        "look at shot.gif",
    ],
)
def test_pastes_worth_a_look(text: str) -> None:
    assert might_name_media(text)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "hello world", "README.md is wrong", "x = a / b\ny = 2", "shot.pngx", "a" * 40_000],
)
def test_pastes_left_alone(text: str) -> None:
    assert not might_name_media(text)


def test_a_video_must_say_so_in_its_bytes(tmp_path: Path) -> None:
    typescript = tmp_path / "app.ts"
    typescript.write_text("export const x = 1;\n")
    movie = tmp_path / "clip.mp4"
    movie.write_bytes(MP4_HEAD)
    renamed = tmp_path / "clip.bin"
    renamed.write_bytes(MP4_HEAD)
    picture = tmp_path / "p.png"
    Image.new("RGB", (4, 4)).save(picture)
    assert _media_kind(typescript) is None
    assert _media_kind(movie) == "video"
    assert _media_kind(renamed) == "video"
    assert _media_kind(picture) == "image"
    assert _media_kind(tmp_path / "missing.png") is None


def test_content_is_text_plus_reference_blocks_in_label_order(
    store: AttachmentStore, tmp_path: Path
) -> None:
    first = admitted(store, tmp_path, "a.png", (255, 0, 0))
    second = admitted(store, tmp_path, "b.png", (0, 0, 255))
    text = "[image 2] then [image 1]"
    tokens = (
        Placeholder(MEDIA_KIND, "[image 1]", 15, MediaItem("image", 1, "a.png", first)),
        Placeholder(MEDIA_KIND, "[image 2]", 0, MediaItem("image", 2, "b.png", second)),
    )
    content, prompt_text = build_content(Sent(text, tokens))
    assert prompt_text == text
    assert isinstance(content, list)
    assert content[0] == {"type": "text", "text": text}
    assert [block["attachment_id"] for block in content[1:]] == [second.id, first.id]
    assert all(len(json.dumps(block)) < 2048 for block in content)
    assert "base64" not in json.dumps(content)


def test_content_without_media_is_a_plain_string() -> None:
    paste = Placeholder("paste", "[Pasted text #1 +3 lines]", 0, "a\nb\nc")
    assert build_content(Sent("hello", (paste,))) == ("hello", "hello")
    assert content_for("hi", ()) == ("hi", "hi")


def test_content_refuses_an_unsampled_video_and_media_still_attaching(tmp_path: Path) -> None:
    video = Placeholder(MEDIA_KIND, "[video 1]", 0, MediaItem("video", 1, "v.mp4", path=tmp_path))
    with pytest.raises(MediaRefused) as refused:
        build_content(Sent("[video 1] go", (video,)))
    assert refused.value.message == "[video 1] (v.mp4) was not sampled: send it again."
    anchor = Placeholder(MEDIA_KIND, "", 0, PendingMedia(1, "paste"))
    with pytest.raises(MediaRefused, match=PENDING_MESSAGE):
        build_content(Sent("go", (anchor,)))
    anchor.payload.done = True  # a retired anchor (brought back by undo) is nothing
    assert build_content(Sent("go", (anchor,))) == ("go", "go")


def test_history_round_trip_by_attachment_id(store: AttachmentStore, tmp_path: Path) -> None:
    source = MediaSource(store, tmp_path)
    attachment = admitted(store, tmp_path)
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(MP4_HEAD)
    draft = Draft(
        "[image 1] and [video 1]",
        (
            Placeholder(MEDIA_KIND, "[image 1]", 0, MediaItem("image", 1, "shot.png", attachment)),
            Placeholder(MEDIA_KIND, "[video 1]", 14, MediaItem("video", 1, "clip.mp4", path=clip)),
            Placeholder(MEDIA_KIND, "", 9, PendingMedia(1, "paste")),  # never persisted
        ),
    )
    saved = json.loads(json.dumps(draft.to_json({MEDIA_KIND: source})))
    assert len(saved["placeholders"]) == 2
    again = Draft.from_json(saved, {MEDIA_KIND: source})
    assert again is not None
    items = [token.payload for token in again.placeholders]
    assert items == [
        MediaItem("image", 1, "shot.png", attachment),
        MediaItem("video", 1, "clip.mp4", path=clip),
    ]


def test_history_load_refuses_what_is_gone_or_mislabelled(
    store: AttachmentStore, tmp_path: Path
) -> None:
    source = MediaSource(store, tmp_path)
    attachment = admitted(store, tmp_path)
    good = {"kind": "image", "number": 1, "attachment_id": attachment.id}
    assert source.load("[image 1]", good) is not None
    assert source.load("[image 2]", good) is None  # the label must match the data
    assert source.load("[image 1]", {**good, "attachment_id": "0" * 64}) is None
    assert source.load("[image 1]", {**good, "attachment_id": "../../etc"}) is None
    assert source.load("[video 1]", {"kind": "video", "number": 1, "path": "/nope.mp4"}) is None
    assert source.load("[image 1]", "junk") is None


def test_a_store_factory_is_only_called_when_needed(tmp_path: Path) -> None:
    calls: list[int] = []

    def factory() -> AttachmentStore:
        calls.append(1)
        return AttachmentStore(tmp_path)

    source = MediaSource(factory, tmp_path)
    assert calls == []
    assert source.max_images == 20
    assert source.store is source.store and calls == [1]
