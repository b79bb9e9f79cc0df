"""The ``dcode -p`` command line the tests run against the scripted model server."""

from __future__ import annotations

import sys
from pathlib import Path

DCODE = str(Path(sys.executable).with_name("dcode"))


def headless_argv(base_url: str, prompt: str, *extra: str) -> list[str]:
    """``dcode -p PROMPT`` on the scripted server's chat wire, with ``extra`` flags after."""
    return [
        DCODE,
        "-p",
        prompt,
        "-m",
        "openai:test-model",
        "--base-url",
        base_url,
        "--api",
        "chat",
        *extra,
    ]
