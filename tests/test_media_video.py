"""Video frame sampling (dcode.media.video) on real videos written with PyAV, and the corpus clips.

The videos are made once per test session (``videos``), small and short except where a case
needs size. Every frame draws its own time (tests/support/videos.py), so a test can check that
the frame behind a label really is the frame shown at that time, and which way up it is.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import av
import pytest
from PIL import Image

from dcode.media import video_client
from dcode.media.store import AttachmentStore
from dcode.media.video import (
    GiB,
    VideoError,
    VideoLimits,
    VideoWindow,
    error_text,
    sample_window,
    window_blocks,
    window_summary,
)
from dcode.media.video_worker import STALL_ENV
from tests.support.corpus import VIDEOS, corpus_params
from tests.support.videos import (
    Spec,
    bar_time,
    children_of,
    claim_duration,
    jpeg_image,
    red_corner,
    truncate,
    without_modules,
    write,
    write_audio_only,
)
from tests.test_media_fixtures import PROJECT_ROOT

VFR_TIMES = [0.0, 0.5, 1.9, 2.3, 2.4, 5.1, 5.2, 7.9, 8.0, 8.5, 13.0, 13.5, 14.2]

SPECS: dict[str, Spec] = {
    "h264.mp4": Spec("mp4", "libx264"),
    "vp9.webm": Spec("webm", "libvpx-vp9"),
    "hevc.mkv": Spec("matroska", "libx265"),
    "mpeg4.avi": Spec("avi", "mpeg4"),
    "long.mp4": Spec("mp4", "libx264", seconds=20, fps=2),
    "long.mkv": Spec("matroska", "libx264", seconds=20, fps=2),
    "long-gop.mp4": Spec("mp4", "libx264", seconds=30, fps=4, gop_seconds=10),
    "rotated.mp4": Spec("mp4", "libx264", rotation=90),
    "phone.mp4": Spec("mp4", "libx264", rotation=-90),
    "vfr.mkv": Spec("matroska", "libx264", times=VFR_TIMES, start=10.0),
    "vfr.mp4": Spec("mp4", "libx264", times=VFR_TIMES, start=10.0),
    "uhd.mp4": Spec("mp4", "libx264", size=(3840, 2160), seconds=3, fps=1),
    "side-4096.mkv": Spec(
        "matroska", "libx264", size=(4096, 64), seconds=1, fps=1, pix_fmt="yuv444p"
    ),
    "side-4097.mkv": Spec(
        "matroska", "libx264", size=(4097, 64), seconds=1, fps=1, pix_fmt="yuv444p"
    ),
    "minutes.mkv": Spec("matroska", "libx264", size=(64, 48), seconds=140, fps=1, gop_seconds=2),
    "noise.mp4": Spec("mp4", "libx264", size=(640, 360), seconds=6, fps=1),
}


class Videos:
    """The session's videos, each written the first time a test asks for it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __getitem__(self, name: str) -> Path:
        path = self.root / name
        if path.exists():
            return path
        if name in SPECS:
            spec = SPECS[name]
            if spec.codec not in av.codecs_available:
                pytest.skip(f"the installed PyAV has no {spec.codec} encoder")
            return write(path, spec)
        match name:
            case "truncated.mp4":
                return truncate(self["long.mp4"], path, 0.5)
            case "truncated.mkv":
                return truncate(self["long.mkv"], path, 0.5)
            case "empty.mp4":
                path.write_bytes(b"")
                return path
            case "audio-only.mp4":
                return write_audio_only(path)
            case "huge-claim.mkv":
                return claim_duration(self["long.mkv"], path, 100_000)
            case "sparse-over-1GiB.mp4":
                with path.open("wb") as handle:
                    handle.write(self["h264.mp4"].read_bytes())
                    handle.truncate(GiB + 1)
                return path
        raise KeyError(name)


@pytest.fixture(scope="session")
def videos(tmp_path_factory: pytest.TempPathFactory) -> Videos:
    return Videos(tmp_path_factory.mktemp("videos"))


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def stored_files(store: AttachmentStore) -> list[Path]:
    return sorted(p for p in store.root.rglob("*") if p.is_file()) if store.root.exists() else []


def texts(blocks: list[dict]) -> list[str]:
    return [b["text"] for b in blocks if b["type"] == "text"]


def frame_images(window: VideoWindow, store: AttachmentStore) -> list[Image.Image]:
    return [jpeg_image(store.read_bytes(f.attachment)) for f in window.frames]


def failure(path: Path, store: AttachmentStore, **kwargs: object) -> str:
    """The tool error of a read that must fail (and must fail as a VideoError, nothing else)."""
    with pytest.raises(VideoError) as caught:
        sample_window(path, store=store, **kwargs)  # type: ignore[arg-type]
    text = error_text(path.name, caught.value)
    assert text.startswith(f"Error reading video {path.name}: ")
    return text


# -- codecs and containers -------------------------------------------------------------


@pytest.mark.parametrize("name", ["h264.mp4", "vp9.webm", "hevc.mkv", "mpeg4.avi"])
def test_each_codec_gives_the_frames_at_their_times(
    videos: Videos, store: AttachmentStore, name: str
) -> None:
    window = sample_window(videos[name], store=store)
    blocks = window_blocks(window, f"clips/{name}")
    assert texts(blocks) == [
        f"Reading first 100s of clips/{name} at 0.5 fps.",
        "Frame at t=00:00:00.000",
        "Frame at t=00:00:02.000",
        "Frame at t=00:00:04.000",
    ]
    assert window_summary(window, f"clips/{name}") == f"Read video clips/{name}: sampled 3 frames."
    assert (window.width, window.height) == (160, 96)
    images = frame_images(window, store)
    assert [(im.format, im.size) for im in images] == [("JPEG", (160, 96))] * 3
    assert [bar_time(im) for im in images] == [0.0, 2.0, 4.0]  # the frame shown at that time
    assert [b["type"] for b in blocks] == ["text"] + ["text", "image"] * 3


@pytest.mark.parametrize("path", corpus_params(VIDEOS, "*.mp4"), ids=lambda p: p.name)
def test_corpus_clips(path: Path, store: AttachmentStore) -> None:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        duration = float(container.duration / av.time_base)
        frames = [
            float((f.pts - stream.start_time) * stream.time_base) for f in container.decode(stream)
        ]
    window = sample_window(path, store=store)
    expected = []
    for target in (0.0, 2.0, 4.0, 6.0):  # the first frame at or after each target
        later = [t for t in frames if t >= target - 0.0005]
        if later:
            expected.append(round(min(later), 3))
    assert [round(f.t, 3) for f in window.frames] == expected
    assert window.duration == pytest.approx(duration)
    assert all(f.attachment.media_type == "image/jpeg" for f in window.frames)
    assert all(f.attachment.width * f.attachment.height <= 1920 * 1080 for f in window.frames)


# -- the window's words ----------------------------------------------------------------


def test_a_later_window_has_the_half_open_header(videos: Videos, store: AttachmentStore) -> None:
    window = sample_window(videos["long.mp4"], store=store, offset=12, limit=90)
    blocks = window_blocks(window, "clips/long.mp4")
    assert texts(blocks) == [
        "Reading [12.000s, 102.000s) of clips/long.mp4 at 0.5 fps.",
        "Frame at t=00:00:12.000",
        "Frame at t=00:00:14.000",
        "Frame at t=00:00:16.000",
        "Frame at t=00:00:18.000",
    ]
    assert [bar_time(im) for im in frame_images(window, store)] == [12.0, 14.0, 16.0, 18.0]
    assert window.continue_at is None  # the stream's end is no cap: no hint


def test_one_frame_is_singular_and_limits_read_back_as_typed(
    videos: Videos, store: AttachmentStore
) -> None:
    one = sample_window(videos["long.mp4"], store=store, limit=1)
    assert window_summary(one, "a.mp4") == "Read video a.mp4: sampled 1 frame."
    assert texts(window_blocks(one, "a.mp4")) == [
        "Reading first 1s of a.mp4 at 0.5 fps.",
        "Frame at t=00:00:00.000",
    ]
    odd = sample_window(videos["long.mp4"], store=store, offset=3.25, limit=12.5)
    assert texts(window_blocks(odd, "a.mp4"))[0] == "Reading [3.250s, 15.750s) of a.mp4 at 0.5 fps."
    assert texts(
        window_blocks(sample_window(videos["long.mp4"], store=store, limit=12.5), "a.mp4")
    )[0] == ("Reading first 12.5s of a.mp4 at 0.5 fps.")


def test_a_negative_offset_is_clamped_to_the_start(videos: Videos, store: AttachmentStore) -> None:
    window = sample_window(videos["long.mp4"], store=store, offset=-7.5, limit=4)
    assert (window.offset, window.limit) == (0.0, 4.0)
    assert texts(window_blocks(window, "a.mp4")) == [
        "Reading first 4s of a.mp4 at 0.5 fps.",
        "Frame at t=00:00:00.000",
        "Frame at t=00:00:02.000",
    ]


@pytest.mark.parametrize("limit", [0, -1, -0.001, float("nan"), float("inf")])
def test_a_limit_that_is_not_positive_is_an_error(
    videos: Videos, store: AttachmentStore, limit: float
) -> None:
    assert failure(videos["long.mp4"], store, limit=limit) == (
        f"Error reading video long.mp4: limit must be a positive number of seconds, got {limit!r}"
    )
    assert stored_files(store) == []


def test_an_offset_past_the_end_names_the_window_and_the_length(
    videos: Videos, store: AttachmentStore
) -> None:
    assert failure(videos["long.mp4"], store, offset=30) == (
        "Error reading video long.mp4: No frames decoded for window [30.000s, 130.000s); the video lasts 20.000s"
    )


def test_the_seek_goes_back_to_a_keyframe_and_decodes_forward(
    videos: Videos, store: AttachmentStore
) -> None:
    """Keyframes every 10 s: 13 s is reached by seeking to the one at 10 s and decoding on,
    so the frame shown is the true 13 s frame (a seek to the nearest packet would show a
    broken picture, or a keyframe's)."""
    window = sample_window(videos["long-gop.mp4"], store=store, offset=13, limit=5)
    assert [f.t for f in window.frames] == [13.0, 15.0, 17.0]
    assert [bar_time(im) for im in frame_images(window, store)] == [13.0, 15.0, 17.0]


# -- pictures: rotation, size, quality ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "corner"), [("rotated.mp4", "bottom-left"), ("phone.mp4", "top-right")]
)
def test_the_display_matrix_is_applied(
    videos: Videos, store: AttachmentStore, name: str, corner: str
) -> None:
    """Coded 160x96 with the red square top-left; a 90° turn counter-clockwise puts it
    bottom-left, a phone's -90° (clockwise) top-right. Either way the frames are portrait."""
    with av.open(str(videos[name])) as container:
        assert next(container.decode(video=0)).rotation == (90 if name == "rotated.mp4" else -90)
    window = sample_window(videos[name], store=store)
    assert (window.width, window.height) == (96, 160)
    images = frame_images(window, store)
    assert {im.size for im in images} == {(96, 160)}
    assert {(f.attachment.width, f.attachment.height) for f in window.frames} == {(96, 160)}
    assert {red_corner(im) for im in images} == {corner}


@pytest.mark.parametrize("name", ["vfr.mkv", "vfr.mp4"])
def test_variable_frame_rate_times_come_from_pts_relative_to_the_stream_start(
    videos: Videos, store: AttachmentStore, name: str
) -> None:
    """Frames at irregular times from a stream that starts at 10 s: each target takes the first
    frame at or after it, and a late frame serves one target only (5.1 s serves 4 s, and
    after a gap 13.0 s serves 10 s, leaving 12 s empty and 14 s to 14.2 s)."""
    with av.open(str(videos[name])) as container:
        assert container.streams.video[0].start_time > 0
    window = sample_window(videos[name], store=store, limit=16)
    labels = texts(window_blocks(window, name))[1:]
    assert labels == [
        "Frame at t=00:00:00.000",
        "Frame at t=00:00:02.300",
        "Frame at t=00:00:05.100",
        "Frame at t=00:00:07.900",
        "Frame at t=00:00:08.000",
        "Frame at t=00:00:13.000",
        "Frame at t=00:00:14.200",
    ]
    assert [bar_time(im) for im in frame_images(window, store)] == [
        0.0,
        2.25,
        5.0,
        8.0,
        8.0,
        13.0,
        14.25,
    ]
    later = sample_window(videos[name], store=store, offset=5, limit=4)
    assert [f.t for f in later.frames] == pytest.approx([5.1, 7.9])


def test_4k_frames_are_scaled_down_to_the_1080p_area(
    videos: Videos, store: AttachmentStore
) -> None:
    window = sample_window(videos["uhd.mp4"], store=store)
    assert (window.width, window.height) == (3840, 2160)  # the source's size
    assert [im.size for im in frame_images(window, store)] == [(1920, 1080), (1920, 1080)]
    assert [f.t for f in window.frames] == [0.0, 2.0]


def test_a_side_over_4096_px_is_refused_and_4096_is_read(
    videos: Videos, store: AttachmentStore
) -> None:
    assert failure(videos["side-4097.mkv"], store) == (
        "Error reading video side-4097.mkv: its frames are 4097x64; frames larger than 4096 px on a side are not read"
    )
    assert stored_files(store) == []
    window = sample_window(videos["side-4096.mkv"], store=store)
    assert (window.width, window.height) == (4096, 64)
    assert [im.size for im in frame_images(window, store)] == [(4096, 64)]


def test_frames_are_jpeg_quality_85(videos: Videos, store: AttachmentStore) -> None:
    window = sample_window(videos["noise.mp4"], store=store, limit=2)
    [frame] = frame_images(window, store)
    reference = jpeg_image(_jpeg(frame.convert("RGB"), quality=85))
    other = jpeg_image(_jpeg(frame.convert("RGB"), quality=84))
    assert frame.quantization == reference.quantization != other.quantization


def _jpeg(image: Image.Image, quality: int) -> bytes:
    import io

    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


# -- caps --------------------------------------------------------------------------------


def test_64_frames_at_most_and_the_hint_goes_last(videos: Videos, store: AttachmentStore) -> None:
    exact = sample_window(videos["minutes.mkv"], store=store, limit=128)
    assert len(exact.frames) == 64 and exact.continue_at is None
    assert texts(window_blocks(exact, "m.mkv"))[-1] == "Frame at t=00:02:06.000"

    cut = sample_window(videos["minutes.mkv"], store=store, limit=200)
    blocks = window_blocks(cut, "m.mkv")
    assert len(cut.frames) == 64 and cut.frames[-1].t == 126.0
    assert blocks[-1] == {
        "type": "text",
        "text": "Coverage truncated at t=00:02:08.000: the output or frame cap was reached before the full "
        "window was decoded. Continue from offset=128.000 to see the remaining frames.",
    }
    assert [b["type"] for b in blocks[-3:]] == ["text", "image", "text"]
    assert window_summary(cut, "m.mkv") == "Read video m.mkv: sampled 64 frames."

    rest = sample_window(videos["minutes.mkv"], store=store, offset=cut.continue_at, limit=72)
    assert [f.t for f in rest.frames][:2] == [128.0, 130.0] and rest.frames[-1].t == 138.0
    assert rest.continue_at is None


def test_a_smaller_frame_cap_cuts_at_the_next_target(
    videos: Videos, store: AttachmentStore
) -> None:
    window = sample_window(videos["long.mp4"], store=store, limits=VideoLimits(max_frames=3))
    assert [f.t for f in window.frames] == [0.0, 2.0, 4.0]
    assert window.continue_at == 6.0 and window.cut_by == "frames"
    assert texts(window_blocks(window, "a.mp4"))[-1].startswith(
        "Coverage truncated at t=00:00:06.000: "
    )


def _emitted(window: VideoWindow, count: int) -> int:
    """What the header, the room kept for the hint, and ``count`` frames weigh (base64 + label)."""
    header = len(window_blocks(window, str(window.path))[0]["text"].encode()) + 400
    return header + sum(
        4 * -(-f.attachment.byte_size // 3) + len("Frame at t=00:00:00.000")
        for f in window.frames[:count]
    )


def test_the_output_cap_cuts_at_a_frame_boundary(
    videos: Videos, store: AttachmentStore, tmp_path: Path
) -> None:
    full = sample_window(videos["noise.mp4"], store=store, limit=6)
    assert len(full.frames) == 3
    cap = _emitted(full, 2)  # room for exactly two frames
    other = AttachmentStore(tmp_path / "other")
    cut = sample_window(
        videos["noise.mp4"], store=other, limit=6, limits=VideoLimits(max_emitted_bytes=cap)
    )
    assert [f.t for f in cut.frames] == [0.0, 2.0]
    assert cut.continue_at == 4.0 and cut.cut_by == "output"
    assert texts(window_blocks(cut, "n.mp4"))[-1].endswith(
        "Continue from offset=4.000 to see the remaining frames."
    )
    one_less = AttachmentStore(tmp_path / "one-less")
    fewer = sample_window(
        videos["noise.mp4"], store=one_less, limit=6, limits=VideoLimits(max_emitted_bytes=cap - 1)
    )
    assert [f.t for f in fewer.frames] == [0.0]


def test_a_first_frame_over_the_output_cap_is_an_error(
    videos: Videos, store: AttachmentStore
) -> None:
    full = sample_window(videos["noise.mp4"], store=store, limit=2)
    cap = _emitted(full, 1) - 1
    text = failure(
        videos["noise.mp4"],
        AttachmentStore(store.root.parent / "b"),
        limit=2,
        limits=VideoLimits(max_emitted_bytes=cap),
    )
    size = full.frames[0].attachment.byte_size
    assert text == (
        f"Error reading video noise.mp4: its first frame alone (t=00:00:00.000, {size:,} bytes) is over the "
        f"{cap:,} bytes output limit"
    )


def test_the_input_limit(videos: Videos, store: AttachmentStore) -> None:
    sparse = videos["sparse-over-1GiB.mp4"]
    assert sparse.stat().st_size == GiB + 1
    assert failure(sparse, store) == (
        f"Error reading video {sparse.name}: the file is {GiB + 1:,} bytes; videos over 1 GiB are not read"
    )
    small = videos["h264.mp4"]
    limit = small.stat().st_size - 1
    assert failure(small, store, limits=VideoLimits(max_input_bytes=limit)) == (
        f"Error reading video h264.mp4: the file is {limit + 1:,} bytes; videos over {limit:,} bytes are not read"
    )
    assert stored_files(store) == []


# -- files that are not (whole) videos -----------------------------------------------------


def test_damaged_and_foreign_files_are_errors_the_model_can_act_on(
    videos: Videos, store: AttachmentStore, tmp_path: Path
) -> None:
    assert (
        failure(videos["empty.mp4"], store)
        == "Error reading video empty.mp4: the file is empty (0 bytes)"
    )
    assert (
        failure(videos["audio-only.mp4"], store)
        == "Error reading video audio-only.mp4: it has no video stream, only audio"
    )
    assert failure(videos["truncated.mp4"], store) == (
        "Error reading video truncated.mp4: cannot open it as a video (Invalid data found when processing input); "
        "the file may be truncated, damaged or not a video"
    )
    text = tmp_path / "notes.mp4"
    text.write_text("just some notes\n" * 100)
    assert failure(text, store).startswith(
        "Error reading video notes.mp4: cannot open it as a video ("
    )
    assert (
        failure(tmp_path / "missing.mp4", store)
        == "Error reading video missing.mp4: it does not exist"
    )
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    assert failure(fifo, store) == "Error reading video pipe.mp4: it is not a regular file"
    assert stored_files(store) == []


def test_a_truncated_stream_keeps_the_frames_before_the_cut(
    videos: Videos, store: AttachmentStore
) -> None:
    window = sample_window(videos["truncated.mkv"], store=store)
    times = [f.t for f in window.frames]
    assert times[:3] == [0.0, 2.0, 4.0] and times[-1] < 20
    assert [bar_time(im) for im in frame_images(window, store)] == times
    assert failure(videos["truncated.mkv"], store, offset=15).startswith(
        "Error reading video truncated.mkv: No frames decoded for window [15.000s, 115.000s); the video lasts "
    )


def test_a_header_claiming_a_huge_duration_over_a_tiny_file(
    videos: Videos, store: AttachmentStore
) -> None:
    huge = videos["huge-claim.mkv"]
    with av.open(str(huge)) as container:
        assert container.duration / av.time_base == 100_000
    window = sample_window(huge, store=store)
    assert [f.t for f in window.frames] == [2.0 * k for k in range(10)]
    assert window.duration == 19.5  # what the stream holds, not what the header claims
    assert failure(huge, store, offset=50_000) == (
        "Error reading video huge-claim.mkv: No frames decoded for window [50000.000s, 50100.000s); the video lasts 19.500s"
    )


# -- the store: deterministic frames, nothing stored twice ---------------------------------


def test_reading_a_window_twice_stores_nothing_new(
    videos: Videos, store: AttachmentStore, tmp_path: Path
) -> None:
    first = sample_window(videos["long.mp4"], store=store, offset=4, limit=8)
    files = stored_files(store)
    again = sample_window(videos["long.mp4"], store=store, offset=4, limit=8)
    assert stored_files(store) == files
    assert window_blocks(again, "a.mp4") == window_blocks(first, "a.mp4")
    # Without the index the frames are decoded again, to the same bytes: the same ids.
    shutil.rmtree(store.root / "video-index")
    decoded = sample_window(videos["long.mp4"], store=store, offset=4, limit=8)
    assert [f.attachment.id for f in decoded.frames] == [f.attachment.id for f in first.frames]
    assert {p for p in stored_files(store) if "video-index" not in p.parts} == {
        p for p in files if "video-index" not in p.parts
    }
    # A copy elsewhere is another file, with the same frames.
    copy = tmp_path / "copy.mp4"
    shutil.copyfile(videos["long.mp4"], copy)
    copied = sample_window(copy, store=store, offset=4, limit=8)
    assert [f.attachment.id for f in copied.frames] == [f.attachment.id for f in first.frames]


def test_a_cut_window_read_twice_decodes_nothing(
    videos: Videos, store: AttachmentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = VideoLimits(max_frames=3)
    first = sample_window(videos["long.mp4"], store=store, limits=limits)
    files = stored_files(store)
    monkeypatch.setattr("dcode.media.video.run_job", _no_decoding)
    again = sample_window(videos["long.mp4"], store=store, limits=limits)
    assert window_blocks(again, "a.mp4") == window_blocks(first, "a.mp4")
    assert again.continue_at == 6.0
    assert stored_files(store) == files
    sample_window(
        videos["long.mp4"], store=store, offset=6, limit=2, limits=limits
    )  # the frame left out is known


def _no_decoding(*args: object, **kwargs: object) -> Iterator[object]:
    raise AssertionError("the decoder was asked for frames the index holds")


def test_a_changed_file_is_decoded_again(
    videos: Videos, store: AttachmentStore, tmp_path: Path
) -> None:
    clip = tmp_path / "clip.mp4"
    shutil.copyfile(videos["long.mp4"], clip)
    before = sample_window(clip, store=store, limit=4)
    shutil.copyfile(videos["h264.mp4"], clip)  # same name, other content
    after = sample_window(clip, store=store, limit=4)
    assert [f.attachment.id for f in after.frames] != [f.attachment.id for f in before.frames]
    assert [bar_time(im) for im in frame_images(after, store)] == [0.0, 2.0]


# -- the deadline ------------------------------------------------------------------------


@pytest.fixture
def stalling_decoder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """Decoders started from now on hang after ``n`` frames (0: before anything)."""
    video_client.POOL.close()  # idle decoders were started without the hook

    def stall_after(frames: int) -> None:
        monkeypatch.setenv(STALL_ENV, str(frames))

    yield stall_after
    monkeypatch.delenv(STALL_ENV, raising=False)
    video_client.POOL.close()


def _decoders() -> list[int]:
    """This process's video decoder children, zombies included."""
    found = []
    for pid in children_of(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"dcode.media.video_worker" in cmdline:
            found.append(pid)
    return found


@pytest.mark.parametrize(
    ("frames", "detail"), [(0, ""), (1, " (1 frame decoded, up to t=00:00:00.000)")]
)
def test_a_stalled_decode_is_stopped_at_the_deadline(
    videos: Videos,
    store: AttachmentStore,
    stalling_decoder: Callable[[int], None],
    frames: int,
    detail: str,
) -> None:
    """The decoder hangs for good; the read still ends at its deadline (plus the time it takes
    to kill a process), with an error, and leaves no process behind."""
    path = videos["long.mp4"]
    stalling_decoder(frames)
    assert _decoders() == []
    limits = VideoLimits(deadline_seconds=4.0)
    started = time.monotonic()
    text = failure(path, store, limits=limits)
    elapsed = time.monotonic() - started
    assert text == (
        f"Error reading video long.mp4: decoding did not finish within the 4 s limit{detail}; read a shorter "
        "window (a smaller limit), or start later (a larger offset)"
    )
    assert elapsed < limits.deadline_seconds + 3.0, (
        "the stalled decode was not abandoned at its deadline"
    )
    assert _decoders() == [], "the stalled decoder is still there"


def test_a_decoder_that_dies_is_an_error_and_the_next_read_works(
    videos: Videos, store: AttachmentStore, stalling_decoder: Callable[[int], None]
) -> None:
    """A decoder killed mid-job (as a crash inside FFmpeg would end it) fails the read at once."""
    stalling_decoder(1)
    done = threading.Event()

    def kill_decoders() -> None:  # each one a second after it appears (a retry gets the same)
        seen: dict[int, float] = {}
        while not done.is_set():
            for pid in _decoders():
                if time.monotonic() - seen.setdefault(pid, time.monotonic()) > 1.0:
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    killer = threading.Thread(target=kill_decoders)
    killer.start()
    try:
        text = failure(videos["long.mp4"], store, limits=VideoLimits(deadline_seconds=30.0))
    finally:
        done.set()
        killer.join()
    assert text == "Error reading video long.mp4: the decoder crashed on this file (signal 9)"
    assert _decoders() == []
    os.environ.pop(STALL_ENV)
    assert [f.t for f in sample_window(videos["long.mp4"], store=store, limit=4).frames] == [
        0.0,
        2.0,
    ]


def test_a_decoder_that_reported_an_error_serves_the_next_read(
    videos: Videos, store: AttachmentStore
) -> None:
    """An error ends the job, not the decoder: the same process reads the next video."""
    video_client.POOL.close()
    failure(videos["audio-only.mp4"], store)
    kept = _decoders()
    assert len(kept) == 1
    sample_window(videos["long.mp4"], store=store, limit=2)
    assert _decoders() == kept


# -- without PyAV ---------------------------------------------------------------------------

_SUPPORT_PROBE = """
import sys
from pathlib import Path
from dcode.media.store import AttachmentStore
from dcode.media.video import VideoError, error_text, sample_window, video_support
print(video_support())
try:
    sample_window(Path(sys.argv[1]), store=AttachmentStore(sys.argv[2]))
except VideoError as exc:
    print(error_text("clip.mp4", exc))
"""


def _support_in(tmp_path: Path, clip: Path, modules: set[str], error: str) -> list[str]:
    env = {**os.environ, **without_modules(tmp_path / "site", modules, error)}
    done = subprocess.run(
        [sys.executable, "-c", _SUPPORT_PROBE, str(clip), str(tmp_path / "store")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PROJECT_ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_without_av_video_support_says_how_to_install_it(videos: Videos, tmp_path: Path) -> None:
    why = (
        "video frame sampling needs PyAV (the av package), which is not installed; install it into "
        f"dcode's environment: {sys.executable} -m pip install av (pipx: pipx inject dcode av)"
    )
    assert _support_in(tmp_path, videos["h264.mp4"], {"av"}, "ModuleNotFoundError") == [
        why,
        f"Error reading video clip.mp4: {why}",
    ]
    assert not (tmp_path / "store").exists()


def test_a_broken_av_is_named_with_its_fix(videos: Videos, tmp_path: Path) -> None:
    [broken, _] = _support_in(tmp_path / "a", videos["h264.mp4"], {"av"}, "ImportError")
    assert broken == (
        "video frame sampling needs PyAV, which is installed but does not load (ImportError: av: "
        f"libavcodec.so.61: cannot open shared object file); reinstall it: {sys.executable} -m pip install "
        "--force-reinstall av"
    )


def test_frames_are_stored_as_any_admission_of_their_bytes_would_store_them(
    videos: Videos, store: AttachmentStore, tmp_path: Path
) -> None:
    """The decoder's JPEGs are checked from their headers, not decoded again; what is stored is
    what admitting the same bytes as a pasted image gives."""
    window = sample_window(videos["uhd.mp4"], store=store, limit=2)
    [frame] = window.frames
    data = store.read_bytes(frame.attachment)
    [pasted] = AttachmentStore(tmp_path / "pasted").admit([(data, frame.attachment.name)])
    assert pasted == frame.attachment and pasted.passthrough
    # Claimed facts that the header contradicts: admitted the ordinary way, with the true facts.
    other = AttachmentStore(tmp_path / "other")
    wrong = other.admit_own_jpeg(data, pasted.name, width=640, height=360)
    assert wrong == pasted
    png = _png(jpeg_image(data))
    as_png = other.admit_own_jpeg(png, "f.png", width=1920, height=1080)
    assert as_png == AttachmentStore(tmp_path / "png").admit([(png, "f.png")])[0]


def _png(image: Image.Image) -> bytes:
    import io

    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def test_a_store_that_cannot_be_written_is_an_error(videos: Videos, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    text = failure(videos["long.mp4"], AttachmentStore(blocked / "attachments"), limit=2)
    assert (
        text
        == "Error reading video long.mp4: the frame at t=00:00:00.000 could not be stored (Not a directory)"
    )


def test_a_decoder_that_cannot_start_is_an_error(
    videos: Videos, store: AttachmentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    video_client.POOL.close()
    monkeypatch.setattr(sys, "executable", str(store.root / "no-python"))
    assert failure(videos["long.mp4"], store, limit=2) == (
        "Error reading video long.mp4: the decoder could not be started (No such file or directory)"
    )
