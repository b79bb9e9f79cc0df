"""A plain clone has no corpus beside it: the tests that read the corpus skip, saying so.

The corpus (``tests/support/corpus.py``) lives outside the repository. Its location is spelled in
one place, and a copy of the tests where nothing is beside the checkout runs the tests that read
it: each one skips with the reason, none fails on a missing file, and the MCP test server, which
draws its own picture, still passes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS_HOME = ROOT / "tests" / "support" / "corpus.py"
SPELLED = re.compile(r"""["']shared["']\s*/\s*["']corpus["']""")  # how a path to it is built

READERS = (
    "tests/test_media_placement.py",
    "tests/test_agent_summarization_media.py::test_every_kind_of_media_part_becomes_one_tag",
    "tests/test_media_wire.py::test_a_replayed_or_resumed_thread_sends_the_same_bytes",
    "tests/test_media_video.py::test_corpus_clips",
    "tests/test_media_corpus.py",
    "tests/test_tui_media.py::test_corpus_broken_png_is_refused_with_its_reason",
)
DRAWS_ITS_OWN = "tests/test_mcp_servers.py::test_stdio_tools_text_image_and_error"


def test_the_corpus_location_is_spelled_in_one_place() -> None:
    spelled = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path != CORPUS_HOME and SPELLED.search(path.read_text(encoding="utf-8"))
    ]
    assert spelled == []
    assert SPELLED.search(CORPUS_HOME.read_text(encoding="utf-8"))  # the check sees the one place


def test_a_plain_clone_skips_what_needs_the_corpus(tmp_path: Path) -> None:
    clone = tmp_path / "clone"  # nothing beside it: no ../shared/corpus
    shutil.copytree(ROOT / "tests", clone / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", clone)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
    }  # dcode itself from this checkout; the tests from the clone
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *READERS, DRAWS_ITS_OWN],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    outcomes = dict(re.findall(r"^(tests/\S+) (PASSED|SKIPPED|FAILED|ERROR)", done.stdout, re.M))
    assert done.returncode == 0, done.stdout[-4_000:]
    assert outcomes[DRAWS_ITS_OWN] == "PASSED"
    skipped = [test for test, outcome in outcomes.items() if outcome == "SKIPPED"]
    assert len(skipped) >= 15 and all(test.startswith(tuple(READERS)) for test in skipped)
    reasons = re.findall(r"^SKIPPED \[\d+\] (\S+): (.*)$", done.stdout, re.M)
    assert reasons and all(
        reason.startswith(f"test corpus not found: {tmp_path}/") for _, reason in reasons
    ), reasons
