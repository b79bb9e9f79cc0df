"""Real videos for the tests, written with PyAV (no tests here).

Every frame shows its own time: a white bar whose left edge sits at ``x = t · PX_PER_SECOND``
(modulo the width) over a background whose red channel also moves with time, plus a red
square in the coded frame's top-left corner, so a test can tell which frame it got and which
way up it is. Frames are small and few unless a case needs size.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
from PIL import Image, ImageDraw

PX_PER_SECOND = 4
MARK = 16
"""Side of the red square in the coded frame's top-left corner."""


@dataclass(frozen=True)
class Spec:
    """One video to write: codec and container, picture size, and when each frame is shown."""

    container: str
    codec: str
    size: tuple[int, int] = (160, 96)
    seconds: float = 6.0
    fps: int = 5
    times: Sequence[float] | None = None
    """Explicit presentation times (variable frame rate); else ``fps`` frames a second."""
    start: float = 0.0
    """The first frame's presentation time (a stream that does not start at 0)."""
    gop_seconds: float = 1.0
    pix_fmt: str = "yuv420p"
    rotation: float | None = None
    """Counter-clockwise display rotation written as the stream's display matrix."""
    options: dict[str, str] = field(default_factory=dict)
    audio: bool = False

    def frame_times(self) -> list[float]:
        if self.times is not None:
            return list(self.times)
        count = round(self.seconds * self.fps)
        return [k / self.fps for k in range(count)]


def picture(t: float, size: tuple[int, int]) -> Image.Image:
    """The frame shown at ``t`` (see the module's docstring)."""
    width, height = size
    image = Image.new("RGB", size, (int(t * 20) % 200 + 30, 60, 120))
    draw = ImageDraw.Draw(image)
    x = round(t * PX_PER_SECOND) % max(1, width - 4)
    draw.rectangle([x, height // 2, x + 3, height - 1], fill=(255, 255, 255))
    draw.rectangle([0, 0, MARK - 1, MARK - 1], fill=(255, 0, 0))
    return image


_ENCODER_DEFAULTS = {
    "libx264": {"preset": "ultrafast", "tune": "zerolatency"},
    "libx265": {"preset": "ultrafast", "log-level": "error", "x265-params": "log-level=error"},
    "libvpx-vp9": {"deadline": "realtime", "cpu-used": "8", "row-mt": "1"},
}


def write(path: Path, spec: Spec) -> Path:
    """Write ``spec`` to ``path`` and return it."""
    times = spec.frame_times()
    rate = Fraction(spec.fps)
    with av.open(str(path), "w", format=spec.container) as out:
        stream = out.add_stream(spec.codec, rate=rate)
        stream.width, stream.height = spec.size
        stream.pix_fmt = spec.pix_fmt
        stream.codec_context.time_base = Fraction(1, 1000)
        stream.time_base = Fraction(1, 1000)
        stream.codec_context.gop_size = max(1, round(spec.gop_seconds * spec.fps))
        stream.options = {**_ENCODER_DEFAULTS.get(spec.codec, {}), **spec.options}
        if spec.rotation is not None:
            stream.set_display_rotation(spec.rotation)
        audio = out.add_stream("aac", rate=8000) if spec.audio else None
        for t in times:
            frame = av.VideoFrame.from_image(picture(t, spec.size)).reformat(format=spec.pix_fmt)
            frame.pts = round((spec.start + t) * 1000)
            frame.time_base = Fraction(1, 1000)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
        if audio is not None:
            _write_silence(out, audio, spec.seconds)
    return path


def write_audio_only(path: Path, seconds: float = 2.0, container: str = "mp4") -> Path:
    with av.open(str(path), "w", format=container) as out:
        _write_silence(out, out.add_stream("aac", rate=8000), seconds)
    return path


def _write_silence(
    out: av.container.OutputContainer, stream: av.audio.stream.AudioStream, seconds: float
) -> None:
    samples = 1024
    layout, rate = "mono", stream.codec_context.sample_rate
    for k in range(int(seconds * rate / samples)):
        frame = av.AudioFrame(format="fltp", layout=layout, samples=samples)
        frame.sample_rate = rate
        frame.pts = k * samples
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        out.mux(stream.encode(frame))
    out.mux(stream.encode(None))


def truncate(source: Path, target: Path, keep: float) -> Path:
    """``target`` holds the first ``keep`` (a fraction) of ``source``'s bytes."""
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return target


MATROSKA_DURATION = b"\x44\x89\x88"
"""The Segment Info Duration element with an 8-byte float body (in TimecodeScale units: ms)."""


def claim_duration(source: Path, target: Path, seconds: float) -> Path:
    """A copy of a Matroska file whose header claims ``seconds`` of video."""
    data = bytearray(source.read_bytes())
    at = data.find(MATROSKA_DURATION)
    if at < 0:
        raise ValueError(f"{source} has no 8-byte Duration element")
    struct.pack_into(">d", data, at + len(MATROSKA_DURATION), seconds * 1000.0)
    target.write_bytes(bytes(data))
    return target


def jpeg_image(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def bar_time(image: Image.Image) -> float:
    """The time a frame shows, read back off its white bar (to a pixel: ±1/PX_PER_SECOND s)."""
    width, height = image.size
    row = image.convert("L").crop((0, height * 3 // 4, width, height * 3 // 4 + 1)).tobytes()
    bright = [x for x, value in enumerate(row) if value > 200]
    if not bright:
        raise AssertionError("no bar in the frame")
    return bright[0] / PX_PER_SECOND


def red_corner(image: Image.Image) -> str:
    """Which corner holds the red square: ``top-left``, ``top-right``, ``bottom-left``, ``bottom-right``."""
    width, height = image.size
    rgb = image.convert("RGB")
    inset = MARK // 2
    corners = {
        "top-left": (inset, inset),
        "top-right": (width - 1 - inset, inset),
        "bottom-left": (inset, height - 1 - inset),
        "bottom-right": (width - 1 - inset, height - 1 - inset),
    }
    red = [name for name, xy in corners.items() if _is_red(rgb.getpixel(xy))]
    if len(red) != 1:
        raise AssertionError(f"red square found in {red or 'no'} corner(s)")
    return red[0]


def _is_red(pixel: Iterable[int]) -> bool:
    r, g, b = tuple(pixel)[:3]
    return r > 180 and g < 80 and b < 80


def children_of(pid: int) -> list[int]:
    """Live (or zombie) processes whose parent is ``pid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


HIDE_MODULES = '''\
import sys


class _Hidden:
    """Makes {modules} fail to import: {error} (dcode's test of a missing video stack)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {modules}:
            raise {error}(f"No module named {{name!r}}" if {error} is ModuleNotFoundError else
                          f"{{name}}: libavcodec.so.61: cannot open shared object file", name=name)
        return None


sys.meta_path.insert(0, _Hidden())
'''


def without_modules(
    directory: Path, modules: set[str], error: str = "ModuleNotFoundError"
) -> dict[str, str]:
    """Environment entries that make a Python process fail to import ``modules``.

    A ``sitecustomize.py`` in ``directory`` (put first on PYTHONPATH) installs a meta-path
    finder that raises ``error`` for them: ``ModuleNotFoundError`` is a package that is not
    installed, ``ImportError`` one that is installed but broken (a missing shared library).
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(
        HIDE_MODULES.format(modules=sorted(modules), error=error)
    )
    return {"PYTHONPATH": str(directory)}
