"""``dcode media inspect``: exactly what each file would become for a model's route.

The profile comes from ``model_profile``, the engine's own resolution, which reads langchain's
known profiles without importing langchain or openai: inspecting one image costs the image work,
not a second of imports.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dcode.settings.config import ConfigError, Settings
from dcode.terminal_text import for_stream, json_safe

if TYPE_CHECKING:
    from dcode.media.inspect import ImageReport
    from dcode.media.inspect_video import VideoReport
    from dcode.models.profiles import ModelProfile


def inspect_command(
    settings: Settings,
    paths: list[Path],
    *,
    as_json: bool,
    offset: float = 0.0,
    limit: float = 100.0,
    sheet: Path | None = None,
) -> int:
    """Each path's report, in order: an image's stages, or a video window's frames
    (``offset``/``limit`` pick the window, ``sheet`` writes its contact sheet)."""
    from dcode.agent.media_route import route_for
    from dcode.media.kinds import detect_media_kind
    from dcode.models.factory import model_profile
    from dcode.models.spec import parse_spec

    try:
        spec = parse_spec(settings.model)
    except ConfigError as exc:
        print(for_stream(f"dcode: error: {exc}", sys.stdout))
        return 2
    videos = [path for path in paths if path.is_file() and detect_media_kind(path) == "video"]
    if sheet is not None and len(videos) != 1:
        print("dcode: error: --sheet writes the contact sheet of one video: name exactly one")
        return 2
    profile = model_profile(spec, settings)
    route = route_for(profile)
    transport = _transport(settings, profile)
    failed = False
    report: ImageReport | VideoReport
    for path in paths:
        if path in videos:
            from dcode.media.inspect_video import describe_video, inspect_video

            report = inspect_video(path, route, offset=offset, limit=limit, sheet=sheet)
            text = describe_video(report, spec.text, profile.image_inputs)
        else:
            from dcode.media.inspect import inspect_path
            from dcode.media.store import AttachmentStore

            report = inspect_path(path, route, AttachmentStore(settings.attachments_dir))
            text = _describe(report, spec.text, profile.image_inputs)
        if "error" not in report:
            report["transport"] = transport[0]
            text += f"\n  transport   {transport[1]}"
        failed = failed or "error" in report
        # A file's name may hold anything: safe on a terminal, and JSON always escaped.
        print(
            json_safe(json.dumps(report, ensure_ascii=False))
            if as_json
            else for_stream(text, sys.stdout)
        )
    return 1 if failed else 0


def _transport(settings: Settings, profile: ModelProfile) -> tuple[str, str]:
    """The route's image transport, and its line; the endpoint is found without its key."""
    from dcode.models.image_transport import image_transport, transport_line, why_transport
    from dcode.models.spec import resolve_address

    try:
        address = resolve_address(settings)
    except ConfigError as exc:
        return "inline", f"inline (the endpoint is unknown: {exc})"
    provider, base_url, api = address.spec.provider, address.base_url, address.api
    transport = image_transport(provider, base_url, api, profile.image_transport)
    return transport, transport_line(
        transport,
        why_transport(provider, base_url, api, profile.image_transport),
        address.spec.text,
    )


def _describe(report: ImageReport, model: str, takes_images: bool) -> str:
    if "error" in report:
        return f"{report['path']}: error: {report['error']}"
    o, n, r = report["original"], report["normalized"], report["request"]
    lines = [
        f"{report['path']}",
        f"  original    {o['width']}x{o['height']} {o['format']}, {o['bytes']:,} bytes",
        (
            f"  normalized  {n['id'][:12]}  {n['width']}x{n['height']} {n['format']}, {n['bytes']:,} bytes"
            f"{', alpha' if n['alpha'] else ''}{', passthrough' if n['passthrough'] else ''}"
        ),
        (
            f"  request     {r['variant_id'][:12]}  {r['width']}x{r['height']} {r['format']}, {r['bytes']:,} bytes, "
            f"~{r['estimated_tokens']:,} tokens for {model} (route {r['max_pixels']:,} px / {r['max_bytes']:,} bytes)"
        ),
    ]
    if not takes_images:
        lines.append(
            f"  note        {model} takes no images: it would get a text placeholder instead"
        )
    return "\n".join(lines)
