"""One-line call summaries and result previews for the UI."""

from __future__ import annotations

from typing import Any

import pytest

from dcode.agent.tools.result import preview_result
from dcode.agent.tools.summary import MAX_SUMMARY_CHARS, summarize_call


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("read_file", {"file_path": "src/app.py"}, "read_file src/app.py"),
        (
            "read_file",
            {"file_path": "src/app.py", "offset": 119, "limit": 81},
            "read_file src/app.py:120-200",
        ),
        ("read_file", {"file_path": "a.py", "offset": 2000}, "read_file a.py:2001-4000"),
        ("read_file", {"file_path": "spec.pdf", "pages": "3-5"}, "read_file spec.pdf pages 3-5"),
        ("read_file", {"file_path": "clip.mp4"}, "read_file clip.mp4"),
        (
            "read_file",
            {"file_path": "clip.mp4", "offset": 12.5},
            "read_file clip.mp4 [12.5s, 112.5s)",
        ),
        (
            "read_file",
            {"file_path": "clip.mp4", "offset": 100, "limit": 20},
            "read_file clip.mp4 [100s, 120s)",
        ),
        ("write_file", {"file_path": "a.py", "content": "x\ny\n"}, "write_file a.py (2 lines)"),
        ("write_file", {"file_path": "a.py", "content": "x"}, "write_file a.py (1 line)"),
        (
            "edit_file",
            {"file_path": "a.py", "old_string": "a", "new_string": "b"},
            "edit_file a.py",
        ),
        ("edit_file", {"file_path": "a.py", "replace_all": True}, "edit_file a.py (replace all)"),
        ("ls", {}, "ls ."),
        ("ls", {"path": "src"}, "ls src"),
        ("glob", {"pattern": "**/*.py"}, "glob **/*.py"),
        ("glob", {"pattern": "*.md", "path": "docs"}, "glob *.md in docs"),
        ("grep", {"pattern": "foo", "path": "src/", "glob": "*.py"}, 'grep "foo" in src/ (*.py)'),
        ("grep", {"pattern": "foo"}, 'grep "foo"'),
        ("execute", {"command": "pytest -q"}, "execute pytest -q"),
        ("execute", {"command": "cd a &&\n  make   all"}, "execute cd a && make all"),
        ("custom", {"x": 1, "y": "z"}, "custom x=1, y=z"),
        ("read_file", {}, "read_file ."),
        ("read_file", {"file_path": "a", "offset": "junk", "limit": None}, "read_file a"),
    ],
)
def test_summarize_call(name: str, args: dict[str, Any], expected: str) -> None:
    assert summarize_call(name, args) == expected


def test_summary_is_truncated() -> None:
    summary = summarize_call("execute", {"command": "echo " + "x" * 200})
    assert len(summary) == MAX_SUMMARY_CHARS
    assert summary.endswith("…")


def test_preview_result() -> None:
    assert preview_result("a\nb\nc\nd\ne") == "a\nb\nc\n… (+2 more lines)"
    assert preview_result("\n\n  \nonly\n") == "only"
    assert preview_result("a\nb", lines=1) == "a\n… (+1 more line)"
    assert preview_result("") == ""
    long_line = preview_result("z" * 500)
    assert len(long_line) <= 120 and long_line.endswith("…")
    assert preview_result("     1\tcode") == "     1  code"
