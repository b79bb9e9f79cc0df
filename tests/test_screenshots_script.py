"""scripts/screenshots.py: one screenshot of the real TUI, generated into a scratch directory."""

from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location(
        "dcode_screenshots_script", ROOT / "scripts" / "screenshots.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_transcript_screenshot_is_an_svg_of_the_session(tmp_path: Path) -> None:
    script = load_script()
    [written] = script.generate(["transcript"], tmp_path)
    assert written == tmp_path / "transcript.svg"
    root = ET.parse(written).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # The screen's text, without spaces: the export leaves out the blank runs between words of
    # different styles, and writes the others as non-breaking spaces.
    text = "".join(
        "".join(node.text or "" for node in root.iter("{http://www.w3.org/2000/svg}text")).split()
    )
    for shown in (
        "make greet.py use an f-string",  # the prompt
        "An f-string reads better",  # the streamed answer
        'print(f"Hello, {name}!")',  # its code block, and the diff
        "✓ edit_file greet.py",  # the approved call
        "+def greet(name: str) -> None:",
        "builds the greeting with an f-string",  # the closing answer's list
        "openai:demo-model",  # the status bar
        "~/demo",
    ):
        assert "".join(shown.split()) in text, shown
    assert "dcode-screenshots" not in text  # the scratch directory is never on screen
