"""What a window of a video would become for a model's route: the data behind
``dcode media inspect clip.mp4 [--offset S --limit S] [--sheet out.png]``.

The window is sampled exactly as read_file samples it (``dcode.media.video.sample_window``),
into a throwaway store: inspecting never fills the user's attachment store with frames they only
looked at. Each frame is listed with its time, its size as stored and its request variant on the
route (size, bytes, token estimate); ``sheet`` also writes the window's contact sheet as a PNG.

Blocking (decode, variants).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Literal, Required, TypedDict

from dcode.media.errors import MediaError
from dcode.media.frames import clock, frames_in
from dcode.media.limits import ImageRoute
from dcode.media.tokens import estimate_image_tokens


class FrameRequest(TypedDict):
    variant_id: str
    width: int
    height: int
    format: str
    bytes: int
    estimated_tokens: int


class FrameReport(TypedDict):
    t: float
    clock: str
    attachment_id: str
    width: int
    height: int
    bytes: int
    request: FrameRequest


class VideoFacts(TypedDict):
    width: int
    height: int
    duration: float | None


class WindowFacts(TypedDict):
    offset: float
    limit: float
    continue_at: float | None


class VideoRequest(TypedDict):
    frames: int
    bytes: int
    estimated_tokens: int
    max_pixels: int
    max_bytes: int


class SheetFacts(TypedDict):
    path: str
    width: int
    height: int


class VideoReport(TypedDict, total=False):
    """``inspect_video``'s report (printed as JSON by ``--json``): the window's frames, or the
    error; the command adds the route's ``transport``."""

    path: Required[str]
    name: str
    kind: Literal["video"]
    video: VideoFacts
    window: WindowFacts
    frames: list[FrameReport]
    request: VideoRequest
    sheet: SheetFacts
    error: str
    transport: str


def inspect_video(
    path: Path,
    route: ImageRoute,
    *,
    offset: float = 0.0,
    limit: float = 100.0,
    sheet: Path | None = None,
) -> VideoReport:
    """``{"path", "name", "kind": "video", "window", "video", "frames", "request", ["sheet"]}``,
    or ``{"path", "error"}`` with the read_file error's text."""
    from dcode.media.store import AttachmentStore
    from dcode.media.variants import VariantService

    try:
        from dcode.media.video import sample_window, video_support, window_blocks
    except ImportError as exc:
        return {"path": str(path), "error": f"video support is not installed ({exc})"}
    why = video_support()
    if why is not None:
        return {"path": str(path), "error": why}
    with tempfile.TemporaryDirectory(prefix="dcode-inspect-") as root:
        store = AttachmentStore(Path(root) / "attachments")
        try:
            window = sample_window(path, store=store, offset=offset, limit=limit)
        except (MediaError, OSError) as exc:
            return {"path": str(path), "error": str(exc)}
        strip = frames_in(window_blocks(window, str(path)))
        service = VariantService(store)
        frames: list[FrameReport] = []
        try:
            for sampled in window.frames:
                att = sampled.attachment
                variant = service.get_sync(att, route)
                frames.append(
                    {
                        "t": round(sampled.t, 3),
                        "clock": clock(sampled.t),
                        "attachment_id": att.id,
                        "width": att.width,
                        "height": att.height,
                        "bytes": att.byte_size,
                        "request": {
                            "variant_id": variant.variant_id,
                            "width": variant.width,
                            "height": variant.height,
                            "format": variant.format,
                            "bytes": variant.byte_size,
                            "estimated_tokens": estimate_image_tokens(
                                variant.width, variant.height, route.tokens
                            ),
                        },
                    }
                )
        finally:
            service.close()
        report: VideoReport = {
            "path": str(path),
            "name": path.name,
            "kind": "video",
            "video": {"width": window.width, "height": window.height, "duration": window.duration},
            "window": {
                "offset": window.offset,
                "limit": window.limit,
                "continue_at": window.continue_at,
            },
            "frames": frames,
            "request": {
                "frames": len(frames),
                "bytes": sum(f["request"]["bytes"] for f in frames),
                "estimated_tokens": sum(f["request"]["estimated_tokens"] for f in frames),
                "max_pixels": route.max_pixels,
                "max_bytes": route.max_bytes,
            },
        }
        if sheet is not None and strip is not None:
            from dcode.media.contact_sheet import write_sheet

            try:
                width, height = write_sheet(strip, store, sheet)
            except OSError as exc:
                report["error"] = f"cannot write the contact sheet {sheet}: {exc.strerror or exc}"
            else:
                report["sheet"] = {"path": str(sheet), "width": width, "height": height}
        return report


def describe_video(report: VideoReport, model: str, takes_images: bool) -> str:
    """The text form of :func:`inspect_video`'s report."""
    if "frames" not in report:
        return f"{report['path']}: error: {report['error']}"
    video, window, request = report["video"], report["window"], report["request"]
    duration = f", {video['duration']:.3f} s" if video.get("duration") is not None else ""
    count = len(report["frames"])
    end = window["offset"] + window["limit"]
    lines = [
        report["path"],
        (
            f"  video       {video['width']}x{video['height']}{duration}; window [{window['offset']:.3f}s, {end:.3f}s) at 0.5 fps: "
            f"{count} frame{'' if count == 1 else 's'}"
        ),
    ]
    for frame in report["frames"]:
        r = frame["request"]
        lines.append(
            f"  frame       {frame['clock']}  {frame['width']}x{frame['height']} JPEG, {frame['bytes']:,} bytes"
            f" -> request {r['width']}x{r['height']} {r['format']}, {r['bytes']:,} bytes, ~{r['estimated_tokens']:,} tokens"
        )
    lines.append(
        f"  request     {count} frames, {request['bytes']:,} bytes, ~{request['estimated_tokens']:,} tokens for {model} "
        f"(route {request['max_pixels']:,} px / {request['max_bytes']:,} bytes)"
    )
    if window.get("continue_at") is not None:
        lines.append(
            f"  truncated   a cap cut the window: continue from --offset {window['continue_at']:.3f}"
        )
    if "sheet" in report:
        sheet = report["sheet"]
        lines.append(f"  sheet       {sheet['path']} ({sheet['width']}x{sheet['height']} PNG)")
    if "error" in report:
        lines.append(f"  error       {report['error']}")
    if not takes_images:
        lines.append(
            f"  note        {model} takes no images: the frames would be text placeholders instead"
        )
    return "\n".join(lines)
