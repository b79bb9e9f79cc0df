"""Tool classification for approval policies."""

from __future__ import annotations

from dcode.agent.tools.classify import is_read_only_tool, is_shell_tool, is_write_tool, target_paths


def test_write_tools() -> None:
    assert is_write_tool("write_file") and is_write_tool("edit_file")
    assert not is_write_tool("execute") and not is_write_tool("read_file")


def test_shell_tools() -> None:
    assert is_shell_tool("execute")
    assert not is_shell_tool("write_file")


def test_read_only_tools() -> None:
    assert all(is_read_only_tool(n) for n in ("ls", "read_file", "glob", "grep"))
    assert not is_read_only_tool("execute") and not is_read_only_tool("unknown")


def test_target_paths() -> None:
    assert target_paths("write_file", {"file_path": "a/b.py", "content": ""}) == ["a/b.py"]
    assert target_paths("edit_file", {"file_path": "/abs/c.py"}) == ["/abs/c.py"]
    assert target_paths("edit_file", {}) == []
    assert target_paths("edit_file", {"file_path": 3}) == []
    assert target_paths("read_file", {"file_path": "a.py"}) == []
    assert target_paths("execute", {"command": "touch x"}) == []
