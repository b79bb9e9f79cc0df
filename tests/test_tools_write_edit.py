"""write_file and edit_file through the real LangChain tool interface."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from dcode.agent.backends import LocalBackend
from dcode.agent.tools import build_tools
from dcode.agent.tools.diffs import RECORDED_DIFF_LINES
from dcode.agent.tools.editing import EditError, apply_edit


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(tmp_path)


@pytest.fixture
def tools(backend: LocalBackend) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in build_tools(backend)}


async def call(tool: BaseTool, **args: Any) -> ToolMessage:
    message = await tool.ainvoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    return message


async def test_write_creates_with_nested_dirs(
    backend: LocalBackend, tools: dict[str, BaseTool]
) -> None:
    message = await call(tools["write_file"], file_path="a/b/c.py", content="x = 1\ny = 2\n")
    assert message.status == "success"
    assert message.content == "Created a/b/c.py (2 lines)."
    assert (backend.root / "a/b/c.py").read_text() == "x = 1\ny = 2\n"


async def test_write_overwrites(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "f.txt").write_text("old\n")
    message = await call(tools["write_file"], file_path="f.txt", content="new")
    assert message.content == "Overwrote f.txt (1 line)."
    assert (backend.root / "f.txt").read_text() == "new"


async def test_write_empty_file(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    message = await call(tools["write_file"], file_path="empty", content="")
    assert message.content == "Created empty (0 lines)."
    assert (backend.root / "empty").read_bytes() == b""


async def test_write_onto_directory_fails(
    backend: LocalBackend, tools: dict[str, BaseTool]
) -> None:
    (backend.root / "d").mkdir()
    message = await call(tools["write_file"], file_path="d", content="x")
    assert message.status == "error" and "d is a directory" in str(message.content)


async def test_write_below_a_file_fails(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "f").write_text("")
    message = await call(tools["write_file"], file_path="f/child.txt", content="x")
    assert message.status == "error"
    assert str(message.content).startswith("write_file: ")


async def test_edit_unique(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "a.py").write_text("def f():\n    return 1\n")
    message = await call(
        tools["edit_file"], file_path="a.py", old_string="return 1", new_string="return 2"
    )
    assert message.status == "success"
    assert message.content == "Edited a.py: 1 replacement."
    assert (backend.root / "a.py").read_text() == "def f():\n    return 2\n"


async def test_edit_not_found(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "a.py").write_text("x = 1\n")
    message = await call(
        tools["edit_file"], file_path="a.py", old_string="x  = 1", new_string="x = 2"
    )
    assert message.status == "error"
    text = str(message.content)
    assert "not found" in text and "Read the file first" in text and "whitespace" in text
    assert (backend.root / "a.py").read_text() == "x = 1\n"


async def test_edit_not_found_hints_at_line_number_prefixes(
    backend: LocalBackend, tools: dict[str, BaseTool]
) -> None:
    (backend.root / "a.py").write_text("x = 1\n")
    message = await call(
        tools["edit_file"], file_path="a.py", old_string="     1\tx = 1", new_string="x = 2"
    )
    assert "line-number prefixes" in str(message.content)


async def test_edit_multiple_without_replace_all(
    backend: LocalBackend, tools: dict[str, BaseTool]
) -> None:
    (backend.root / "a.py").write_text("a = 0\na = 0\na = 0\n")
    message = await call(
        tools["edit_file"], file_path="a.py", old_string="a = 0", new_string="a = 1"
    )
    assert message.status == "error"
    text = str(message.content)
    assert "occurs 3 times" in text and "replace_all" in text
    assert (backend.root / "a.py").read_text() == "a = 0\na = 0\na = 0\n"


async def test_edit_replace_all(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "a.py").write_text("a = 0\na = 0\nb = 0\n")
    message = await call(
        tools["edit_file"],
        file_path="a.py",
        old_string="a = 0",
        new_string="a = 1",
        replace_all=True,
    )
    assert message.content == "Edited a.py: 2 replacements."
    assert (backend.root / "a.py").read_text() == "a = 1\na = 1\nb = 0\n"


async def test_edit_identical_strings(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "a.py").write_text("x\n")
    message = await call(tools["edit_file"], file_path="a.py", old_string="x", new_string="x")
    assert message.status == "error" and "identical" in str(message.content)


async def test_edit_missing_file(tools: dict[str, BaseTool]) -> None:
    message = await call(tools["edit_file"], file_path="nope.py", old_string="a", new_string="b")
    assert message.status == "error"
    assert "nope.py does not exist" in str(message.content) and "write_file" in str(message.content)


async def test_edit_binary_file(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "b.bin").write_bytes(b"\xff\xfe\x00")
    message = await call(tools["edit_file"], file_path="b.bin", old_string="a", new_string="b")
    assert message.status == "error" and "not UTF-8" in str(message.content)


async def test_edit_keeps_crlf(backend: LocalBackend, tools: dict[str, BaseTool]) -> None:
    (backend.root / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    message = await call(
        tools["edit_file"], file_path="dos.txt", old_string="one\ntwo", new_string="1\n2"
    )
    assert message.status == "success"
    assert (backend.root / "dos.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_apply_edit_empty_old_string() -> None:
    with pytest.raises(EditError, match="write_file"):
        apply_edit("abc", "", "x")


def test_apply_edit_is_literal_not_regex() -> None:
    assert apply_edit("a.b a+b", "a+b", "c").text == "a.b c"


async def test_a_write_records_its_whole_diff(
    backend: LocalBackend, tools: dict[str, BaseTool]
) -> None:
    message = await call(tools["write_file"], file_path="small.txt", content="one\ntwo\n")
    assert message.artifact == {
        "diff": "--- /dev/null\n+++ b/small.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    }


async def test_a_huge_write_records_the_head_of_its_diff_and_what_was_left_out(
    backend: LocalBackend, tools: dict[str, BaseTool]
) -> None:
    """The diff is saved in every later checkpoint: a big new file must not be saved twice over."""
    content = "".join(f"line {n}\n" for n in range(5_000))
    message = await call(tools["write_file"], file_path="big.txt", content=content)
    assert (backend.root / "big.txt").read_text() == content  # the file itself is whole
    recorded = message.artifact["diff"].splitlines()
    assert len(recorded) == RECORDED_DIFF_LINES + 1
    assert recorded[:4] == ["--- /dev/null", "+++ b/big.txt", "@@ -0,0 +1,5000 @@", "+line 0"]
    assert recorded[-1] == "… 3,003 more diff lines not kept (+3,003 -0)"
