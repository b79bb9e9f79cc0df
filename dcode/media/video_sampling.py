"""Frame sampling with PyAV: the decoder process's real work (see ``video_worker``).

Targets lie on a 2-second grid from the window's offset. Each target takes the first frame
whose presentation time is at or after it, time being ``(pts − stream start)·time_base`` and
never ``index / average_rate`` (wrong on variable frame rate). A frame serves one target;
the next target is then the first grid point after that frame, so a late frame (2.5 s for the
2 s target) still lets the 4 s frame serve 4 s, and a long still (one frame, then nothing for
a minute) is sent once instead of thirty times.

Decoding cost is where the time goes, so the sampler decodes as little as it can:
- it seeks to the keyframe at or before the offset, then decodes forward;
- before each later target it asks the container's index where that target's keyframe is.
  When the keyframe lies well past the last decoded frame, it seeks there and skips the
  frames in between (a 1080p stream with a keyframe every 2 s decodes one frame per target);
  otherwise it keeps decoding forward, so frames are never decoded twice (a 10 s GOP costs
  each frame once instead of once per target);
- frames are converted (scaled by libswscale straight to RGB, rotated, JPEG-encoded) on a
  second thread while the next ones decode; both release the GIL.

Damage is tolerated the way players tolerate it: a packet that fails to decode is dropped,
and a read error ends the stream there, with the frames decoded so far kept. The first such
error is reported with the end of the job, so an empty window can say *why* it is empty.
"""

# Any: a job's request is JSON read from the parent's pipe

from __future__ import annotations

import io
import math
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol

import av
import av.error
from PIL import Image

from dcode.media.sizing import fit_pixels
from dcode.media.video_grid import Grid

if TYPE_CHECKING:
    from av.container import InputContainer
    from av.video.frame import VideoFrame
    from av.video.stream import VideoStream

SEEK_GAIN = 0.25
"""Seek ahead only when the target's keyframe is this many seconds past the last decoded frame."""
MAX_DECODE_ERRORS = 200
MIN_PLAUSIBLE_BYTES_PER_SECOND = 8
"""A header claiming more seconds than the file could hold at 64 bit/s is not believed."""

_TRANSPOSE = {
    90: Image.Transpose.ROTATE_90,
    180: Image.Transpose.ROTATE_180,
    270: Image.Transpose.ROTATE_270,
}


class SampleError(Exception):
    """The job failed; ``str()`` is the sentence shown to the model."""


@dataclass(frozen=True, slots=True)
class Job:
    path: str
    offset: float
    limit: float
    interval: float
    max_frames: int
    max_side: int
    max_pixels: int
    quality: int

    @classmethod
    def from_request(cls, request: dict[str, Any]) -> Job:
        return cls(
            path=str(request["path"]),
            offset=float(request["offset"]),
            limit=float(request["limit"]),
            interval=float(request["interval"]),
            max_frames=int(request["max_frames"]),
            max_side=int(request["max_side"]),
            max_pixels=int(request["max_pixels"]),
            quality=int(request["quality"]),
        )


class Sink(Protocol):
    """Where the sampler's results go (the pipe to dcode, or a list in a test)."""

    def facts(self, facts: dict[str, Any]) -> None: ...

    def frame(self, target: float, t: float, width: int, height: int, jpeg: bytes) -> None: ...

    def stop_requested(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Outcome:
    reason: str  # window | frames | eof | stopped
    next_target: float | None
    last_t: float | None
    damage: str | None


def sample(job: Job, sink: Sink) -> Outcome:
    """Run one job; raises :class:`SampleError` with the reason when the file cannot be read."""
    try:
        container = av.open(job.path, metadata_errors="ignore")
    except av.error.FFmpegError as exc:
        raise SampleError(
            f"cannot open it as a video ({_reason(exc)}); the file may be truncated, "
            "damaged or not a video"
        ) from exc
    with container:
        stream = _video_stream(container)
        return _Sampler(job, container, stream, sink).run()


def _video_stream(container: InputContainer) -> VideoStream:
    streams = [s for s in container.streams.video if not _is_cover_art(s)]
    if not streams:
        if container.streams.audio:
            raise SampleError("it has no video stream, only audio")
        raise SampleError("it has no video stream")
    stream = streams[0]
    if not stream.time_base:
        raise SampleError(
            "its video stream has no time base, so its frames cannot be placed in time"
        )
    if stream.codec_context is None:
        raise SampleError("no decoder is available for its video codec (unsupported codec)")
    return stream


def _is_cover_art(stream: VideoStream) -> bool:
    try:
        return bool(stream.disposition & av.stream.Disposition.attached_pic)
    except (AttributeError, TypeError):
        return False


def _reason(exc: BaseException) -> str:
    # PyAV's errors carry strerror without all being OSErrors.
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text).rstrip(".")


class _Sampler:
    def __init__(
        self, job: Job, container: InputContainer, stream: VideoStream, sink: Sink
    ) -> None:
        self.job = job
        self.container = container
        self.stream = stream
        self.sink = sink
        self.grid = Grid(job.offset, job.limit, job.interval)
        assert stream.time_base is not None  # a stream without one is refused first
        self.time_base = Fraction(stream.time_base)
        self.start = _start_pts(container, stream)
        codec = stream.codec_context
        self._check_side(codec.width, codec.height)
        codec.thread_type = "AUTO"
        self.sar = _sample_aspect(stream)
        self.last_t: float | None = None
        self.damage: str | None = None
        self.errors = 0
        self.untimed = 0
        self.facts_sent = False
        self.can_seek = True

    def run(self) -> Outcome:
        encoder = _Encoder(self.sink, self.job)
        try:
            outcome = self._decode(encoder)
        except BaseException:
            encoder.abandon()
            raise
        encoder.close()
        if not self.facts_sent:
            self._send_facts(None)
        return outcome

    def _decode(self, encoder: _Encoder) -> Outcome:
        k, produced = 0, 0
        seek_to: float | None = self.job.offset if self.job.offset > 0 else None
        while True:
            if seek_to is not None:
                self._seek(seek_to)
                seek_to = None
            for frame in self._frames():
                t = self._time(frame)
                if t is None:
                    continue
                self.last_t = t
                if not self.facts_sent:
                    self._send_facts(frame)
                if not self.grid.reached(k, t):
                    continue
                target = self.grid.target(k)
                self._check_side(frame.width, frame.height)
                encoder.submit(target, t, frame, self.sar)
                produced += 1
                k = self.grid.next_index(k, t)
                if k >= self.grid.count:
                    return self._outcome("window")
                if produced >= self.job.max_frames:
                    return self._outcome("frames")
                if self.sink.stop_requested():
                    return self._outcome("stopped")
                if self._worth_seeking(self.grid.target(k), t):
                    seek_to = self.grid.target(k)
                    break
            else:
                if self.untimed and self.last_t is None:
                    raise SampleError(
                        "its frames carry no timestamps, so they cannot be placed in time "
                        "(a raw stream: remux it into a container, e.g. ffmpeg -i IN -c copy OUT.mp4)"
                    )
                return self._outcome("eof", next_target=self.grid.target(k))

    def _outcome(self, reason: str, next_target: float | None = None) -> Outcome:
        return Outcome(reason, next_target, self.last_t, self.damage)

    # -- reading -----------------------------------------------------------------------------

    def _frames(self) -> Iterator[VideoFrame]:
        """Decoded frames from the current position; damage ends the stream, never the job."""
        packets = self.container.demux(self.stream)
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                return
            except av.error.FFmpegError as exc:
                self._note_damage(exc)
                yield from self._flush()
                return
            try:
                frames = packet.decode()
            except av.error.FFmpegError as exc:
                self._note_damage(exc)
                self.errors += 1
                if self.errors > MAX_DECODE_ERRORS and self.last_t is None:
                    raise SampleError(f"its video stream does not decode ({self.damage})") from exc
                continue
            yield from frames

    def _flush(self) -> Iterator[VideoFrame]:
        try:
            yield from self.stream.codec_context.decode(None)
        except av.error.FFmpegError as exc:
            self._note_damage(exc)

    def _note_damage(self, exc: BaseException) -> None:
        if self.damage is None and not isinstance(exc, av.error.EOFError):
            self.damage = _reason(exc)

    def _seek(self, target: float) -> None:
        if not self.can_seek:
            return
        ts = self.start + math.floor(Fraction(target) / self.time_base)
        try:
            self.container.seek(ts, stream=self.stream, backward=True, any_frame=False)
        except av.error.FFmpegError as exc:
            # Not seekable (no index, a damaged one): decode forward from where we are.
            self.can_seek = False
            self._note_damage(exc)

    def _worth_seeking(self, target: float, position: float) -> bool:
        """Whether ``target``'s keyframe lies far enough past ``position`` to skip to it."""
        if not self.can_seek:
            return False
        entries = self.stream.index_entries
        if len(entries) < 2:
            return False
        ts = self.start + math.floor(Fraction(target) / self.time_base)
        found = entries.search_timestamp(ts, backward=True)
        if found < 0:
            return False
        keyframe = float((entries[found].timestamp - self.start) * self.time_base)
        return keyframe > position + SEEK_GAIN

    def _time(self, frame: VideoFrame) -> float | None:
        pts = frame.pts
        if pts is None:
            self.untimed += 1
            return None
        return float((pts - self.start) * self.time_base)

    def _check_side(self, width: int, height: int) -> None:
        side = self.job.max_side
        if max(width, height) > side:
            raise SampleError(
                f"its frames are {width}x{height}; frames larger than {side} px on a side "
                "are not read"
            )

    def _send_facts(self, frame: VideoFrame | None) -> None:
        self.facts_sent = True
        codec = self.stream.codec_context
        width = frame.width if frame is not None else codec.width
        height = frame.height if frame is not None else codec.height
        rotation = _rotation(frame) if frame is not None else 0
        shown_w, shown_h = _display_size(width, height, self.sar, rotation)
        self.sink.facts(
            {
                "width": shown_w,
                "height": shown_h,
                "rotation": rotation,
                "duration": self._duration(),
                "codec": codec.name,
            }
        )

    def _duration(self) -> float | None:
        """The container's claimed length, when the file is big enough to hold it."""
        seconds: float | None = None
        if self.container.duration:
            seconds = self.container.duration / av.time_base
        elif self.stream.duration:
            seconds = float(self.stream.duration * self.time_base)
        if seconds is None or not math.isfinite(seconds) or seconds <= 0:
            return None
        size = self.container.size or 0  # unknown (None, or 0: not a file) on some inputs
        if size > 0 and size / seconds < MIN_PLAUSIBLE_BYTES_PER_SECOND:
            return None
        return seconds


def _start_pts(container: InputContainer, stream: VideoStream) -> int:
    if stream.start_time is not None:
        return int(stream.start_time)
    if container.start_time is not None and stream.time_base is not None:
        return math.floor(Fraction(container.start_time, av.time_base) / Fraction(stream.time_base))
    return 0


def _sample_aspect(stream: VideoStream) -> Fraction | None:
    sar = stream.sample_aspect_ratio
    if not sar or sar <= 0 or sar == 1:
        return None
    return Fraction(sar)


def _rotation(frame: VideoFrame) -> int:
    """Counter-clockwise degrees from the display matrix, snapped to a quarter turn."""
    try:
        degrees = float(frame.rotation)
    except (AttributeError, TypeError, ValueError):
        return 0
    if not math.isfinite(degrees):
        return 0
    return (round(degrees / 90) * 90) % 360


def _display_size(width: int, height: int, sar: Fraction | None, rotation: int) -> tuple[int, int]:
    if sar is not None:
        width = max(1, round(width * sar))
    return (height, width) if rotation in (90, 270) else (width, height)


def encode_frame(
    frame: VideoFrame, sar: Fraction | None, max_pixels: int, quality: int
) -> tuple[bytes, int, int]:
    """One decoded frame as an upright JPEG no larger than ``max_pixels``: (bytes, width, height).

    libswscale does the colour conversion and the downscale (area averaging) in one pass,
    straight from the decoder's YUV; only the quarter-turn rotation is left to Pillow.
    """
    rotation = _rotation(frame)
    shown_w, shown_h = _display_size(frame.width, frame.height, sar, rotation)
    out_w, out_h = fit_pixels(shown_w, shown_h, max_pixels)
    scale_w, scale_h = (out_h, out_w) if rotation in (90, 270) else (out_w, out_h)
    resized = (scale_w, scale_h) != (frame.width, frame.height)
    rgb = frame.reformat(
        width=scale_w,
        height=scale_h,
        format="rgb24",
        interpolation="AREA" if resized else None,
    )
    plane = rgb.planes[0]
    # a buffer PIL reads in place; the stubs know bytes and arrays only
    image = Image.frombuffer("RGB", (scale_w, scale_h), plane, "raw", "RGB", plane.line_size, 1)  # type: ignore[arg-type]
    if rotation in _TRANSPOSE:
        image = image.transpose(_TRANSPOSE[rotation])
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality, subsampling=2)
    return out.getvalue(), out_w, out_h


class _Encoder:
    """Converts and sends frames on a second thread, in order, while decoding goes on."""

    def __init__(self, sink: Sink, job: Job) -> None:
        self.sink = sink
        self.job = job
        self.queue: queue.Queue[tuple[float, float, VideoFrame, Fraction | None] | None] = (
            queue.Queue(maxsize=2)
        )
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="video-encode", daemon=True)
        self.thread.start()

    def submit(self, target: float, t: float, frame: VideoFrame, sar: Fraction | None) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put((target, t, frame, sar))

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error

    def abandon(self) -> None:
        self.error = self.error or SampleError("stopped")
        self.queue.put(None)
        self.thread.join()

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            if self.error is not None:
                continue  # keep draining so that submit() never blocks on a dead consumer
            target, t, frame, sar = item
            try:
                jpeg, width, height = encode_frame(
                    frame, sar, self.job.max_pixels, self.job.quality
                )
                self.sink.frame(target, t, width, height, jpeg)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the decoding thread
                self.error = exc
