"""Media kind detection (magic bytes, then extension) and the refusal of videos."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.media.errors import AdmissionError, RejectReason, VideoNotSupportedError
from dcode.media.kinds import detect_media_kind, require_not_video, sniff_format
from dcode.media.store import AttachmentStore, Source
from tests.test_media_fixtures import corpus_file, encode, gradient, requires_corpus

av = pytest.importorskip("av")


def make_video(path: Path, codec: str, frames: int = 3) -> Path:
    """A real (tiny) video written with PyAV."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(frames):
            frame = av.VideoFrame.from_image(gradient((64, 48)).rotate(i * 10))
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


VIDEOS = [
    ("clip.mp4", "libx264", "MP4"),
    ("clip.webm", "libvpx-vp9", "WEBM"),
    ("clip.mkv", "libx264", "MKV"),
    ("clip.avi", "mpeg4", "AVI"),
    ("clip.mov", "libx264", "MOV"),
]


@pytest.mark.parametrize(("name", "codec", "container"), VIDEOS)
def test_real_videos_are_videos_even_when_misnamed(
    tmp_path: Path, name: str, codec: str, container: str
) -> None:
    path = make_video(tmp_path / name, codec)
    assert detect_media_kind(path) == "video"
    assert sniff_format(path.read_bytes()[:376]) == container
    misnamed = path.rename(tmp_path / "actually-a-video.png")
    assert detect_media_kind(misnamed) == "video"


def test_images_by_magic_even_without_extension(tmp_path: Path) -> None:
    for fmt in ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF"):
        path = tmp_path / f"noext-{fmt}"
        path.write_bytes(encode(gradient((8, 8)), fmt))
        assert detect_media_kind(path) == "image", fmt


@requires_corpus
@pytest.mark.parametrize(
    "name", ["hopper.ico", "avif/icc_profile.avif", "hopper.tif", "hopper.bmp"]
)
def test_corpus_images_are_images(name: str) -> None:
    assert detect_media_kind(corpus_file(name)) == "image"


def test_extension_decides_when_magic_is_silent(tmp_path: Path) -> None:
    for name, kind in [
        ("a.mp4", "video"),
        ("b.PNG", "image"),
        ("c.webm", "video"),
        ("d.txt", None),
    ]:
        path = tmp_path / name
        path.write_bytes(b"\x01\x02\x03 unknown bytes")
        assert detect_media_kind(path) == kind, name


def test_other_content_is_neither(tmp_path: Path) -> None:
    pdf = tmp_path / "doc.png"
    pdf.write_bytes(b"%PDF-1.7\n%...")
    assert detect_media_kind(pdf) is None  # the bytes say PDF: trust them over the name
    text = tmp_path / "notes.md"
    text.write_text("# hello\n")
    assert detect_media_kind(text) is None
    assert detect_media_kind(tmp_path) is None
    assert detect_media_kind(tmp_path / "missing.png") is None


def test_video_admission_is_refused_clearly(tmp_path: Path) -> None:
    path = make_video(tmp_path / "screen-recording.mp4", "libx264")
    store = AttachmentStore(tmp_path / "store")
    with pytest.raises(AdmissionError) as info:
        store.admit([Source.from_path(path)])
    assert info.value.reason is RejectReason.VIDEO_UNSUPPORTED
    assert "video input is not supported yet" in str(info.value)
    with pytest.raises(VideoNotSupportedError, match=r"screen-recording\.mp4"):
        require_not_video(path)
    require_not_video(tmp_path / "store")  # not a video: no error
