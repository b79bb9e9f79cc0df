"""``dcode media inspect``: exactly what each file would become for a model's route.

The profile comes from ``model_profile``, the engine's own resolution, which reads langchain's
known profiles without importing langchain or openai: inspecting one image costs the image work,
not a second of imports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dcode.config import ConfigError, Settings


def inspect_command(settings: Settings, paths: list[Path], *, as_json: bool) -> int:
    from dcode.agent.media_route import route_for
    from dcode.media.inspect import inspect_path
    from dcode.media.store import AttachmentStore
    from dcode.models.factory import model_profile
    from dcode.models.spec import parse_spec

    try:
        spec = parse_spec(settings.model)
    except ConfigError as exc:
        print(f"dcode: error: {exc}")
        return 2
    profile = model_profile(spec, settings)
    route = route_for(profile)
    store = AttachmentStore(settings.attachments_dir)
    reports = [inspect_path(path, route, store) for path in paths]
    for report in reports:
        print(json.dumps(report, ensure_ascii=False) if as_json else _describe(report, spec.text, profile.image_inputs))
    return 1 if any("error" in r for r in reports) else 0


def _describe(report: dict[str, Any], model: str, takes_images: bool) -> str:
    if "error" in report:
        return f"{report['path']}: error: {report['error']}"
    o, n, r = report["original"], report["normalized"], report["request"]
    lines = [
        f"{report['path']}",
        f"  original    {o['width']}x{o['height']} {o['format']}, {o['bytes']:,} bytes",
        f"  normalized  {n['id'][:12]}  {n['width']}x{n['height']} {n['format']}, {n['bytes']:,} bytes"
        f"{', alpha' if n['alpha'] else ''}{', passthrough' if n['passthrough'] else ''}",
        f"  request     {r['variant_id'][:12]}  {r['width']}x{r['height']} {r['format']}, {r['bytes']:,} bytes, "
        f"~{r['estimated_tokens']:,} tokens for {model} (route {r['max_pixels']:,} px / {r['max_bytes']:,} bytes)",
    ]
    if not takes_images:
        lines.append(f"  note        {model} takes no images: it would get a text placeholder instead")
    return "\n".join(lines)
