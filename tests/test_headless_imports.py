"""A ``dcode -p`` turn that reads no media and has no async agents or uploads configured does
not import what only those paths use: their modules load where a session needs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.model_server import reply
from tests.support.stores import store_env

LAZY = (
    "dcode.models.files_api",  # the Files API: only on a route that uploads images
    "dcode.media.uploads.resolver",
    "dcode.agent.media_files",
    "dcode.agent.async_tasks.remote",  # the async task tools: only with [[async_agents]]
    "dcode.agent.async_tasks.middleware",
    "dcode.agent.tools.read_pdf",  # read_file's readers: only for a file of their kind
    "dcode.agent.tools.read_video",
    "dcode.agent.tools.read_audio",
    "dcode.media.video",
)

PROBE = """
import json, sys
from dcode.cli.app import main
code = None
try:
    main({argv!r})
except SystemExit as exc:
    code = exc.code
print(json.dumps({{"code": code, "loaded": sorted(set({lazy!r}) & set(sys.modules))}}), file=sys.stderr)
"""


def test_a_plain_turn_skips_the_paths_it_does_not_use(server, workspace: Path, home: Path) -> None:
    server.script(reply("Hello."))
    argv = ["-p", "say hello", "-m", "openai:test-model", "--base-url", server.base_url]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
        **store_env(),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, lazy=LAZY)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert result.stdout == "Hello.\n"
    assert report == {"code": 0, "loaded": []}
