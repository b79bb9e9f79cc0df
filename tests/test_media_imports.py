"""``dcode.media`` is pure core: no UI, no langchain, and Pillow only where pixels are touched."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.test_media_fixtures import PROJECT_ROOT

CORE_MODULES = [
    "attachment", "bands", "clean", "colour", "contact_sheet", "decode", "derive", "encode",
    "errors", "facts", "frames", "gif_frames", "handles", "inline", "inspect", "inspect_video", "kinds",
    "limits", "memory", "normalize", "offload", "pool", "sizing", "stages", "store", "tokens",
    "variant_cache", "variants", "video_input",
]  # fmt: skip


def loaded_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    return set(json.loads(out.stdout))


def test_media_never_imports_ui_or_langchain() -> None:
    modules = loaded_after("\n".join(f"import dcode.media.{m}" for m in CORE_MODULES))
    forbidden = {m for m in modules if m.split(".")[0] in {"textual", "langchain", "langgraph"}}
    forbidden |= {m for m in modules if m.startswith(("dcode.tui", "langchain_", "rich"))}
    assert not forbidden


def test_light_entry_points_do_not_load_pillow() -> None:
    modules = loaded_after(
        "import dcode.media\n"
        "from dcode.media import detect_media_kind, to_reference_block, from_reference_block\n"
        "import dcode.media.offload, dcode.media.handles, dcode.media.tokens, dcode.media.frames"
    )
    assert "PIL" not in modules and "PIL.Image" not in modules


def test_lazy_exports_resolve() -> None:
    import dcode.media as media

    for name in media.__all__:
        assert getattr(media, name) is not None
