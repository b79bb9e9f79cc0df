"""ls, glob and grep through the real LangChain tool interface."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from dcode.agent.backends import LocalBackend
from dcode.agent.tools import build_tools
from dcode.agent.tools.grep import MAX_MATCHES

ENGINES = [
    pytest.param(
        True, id="ripgrep", marks=pytest.mark.skipif(shutil.which("rg") is None, reason="no rg")
    ),
    pytest.param(False, id="python"),
]


@pytest.fixture(params=ENGINES)
def tools(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, BaseTool]:
    root = tmp_path / "ws"
    files = {
        ".gitignore": "ignored/\n",
        "src/app.py": "def main():\n    print('hello')\n",
        "src/lib.py": "HELLO = 'hello'\n",
        "ignored/junk.py": "hello\n",
        "docs/readme.md": "say hello\n",
        "logo.png": "",
    }
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    (root / "logo.png").write_bytes(b"\x89PNG\x00hello")
    backend = LocalBackend(root, use_ripgrep=request.param)
    return {tool.name: tool for tool in build_tools(backend)}


async def call(tool: BaseTool, **args: Any) -> ToolMessage:
    message = await tool.ainvoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    return message


async def test_ls(tools: dict[str, BaseTool]) -> None:
    message = await call(tools["ls"], path=".")
    assert message.content == ".gitignore\ndocs/\nignored/\nlogo.png\nsrc/"
    assert (await call(tools["ls"])).content == message.content


async def test_ls_errors(tools: dict[str, BaseTool]) -> None:
    missing = await call(tools["ls"], path="nope")
    assert missing.status == "error" and "nope does not exist" in str(missing.content)
    on_file = await call(tools["ls"], path="src/app.py")
    assert on_file.status == "error" and "read_file" in str(on_file.content)


async def test_ls_empty_directory(tools: dict[str, BaseTool], tmp_path: Path) -> None:
    (tmp_path / "ws" / "empty").mkdir()
    assert (await call(tools["ls"], path="empty")).content == "empty is empty."


async def test_glob(tools: dict[str, BaseTool]) -> None:
    message = await call(tools["glob"], pattern="**/*.py")
    assert sorted(str(message.content).splitlines()) == ["src/app.py", "src/lib.py"]
    scoped = await call(tools["glob"], pattern="*.md", path="docs")
    assert scoped.content == "docs/readme.md"


async def test_glob_no_match_and_errors(tools: dict[str, BaseTool]) -> None:
    none = await call(tools["glob"], pattern="**/*.rs")
    assert none.status == "success" and "No files match" in str(none.content)
    missing = await call(tools["glob"], pattern="*", path="nope")
    assert missing.status == "error" and "nope does not exist" in str(missing.content)


async def test_grep(tools: dict[str, BaseTool]) -> None:
    message = await call(tools["grep"], pattern="hello")
    assert str(message.content).splitlines() == [
        "docs/readme.md:1:say hello",
        "src/app.py:2:    print('hello')",
        "src/lib.py:1:HELLO = 'hello'",
    ]


async def test_grep_with_path_and_glob(tools: dict[str, BaseTool]) -> None:
    message = await call(tools["grep"], pattern="(?i)^hello", path="src", glob="*.py")
    assert message.content == "src/lib.py:1:HELLO = 'hello'"


async def test_grep_no_match(tools: dict[str, BaseTool]) -> None:
    message = await call(tools["grep"], pattern="absent", glob="*.py")
    assert message.status == "success"
    assert message.content == "No matches for 'absent' in . (*.py)."


async def test_grep_errors(tools: dict[str, BaseTool]) -> None:
    bad = await call(tools["grep"], pattern="(unclosed")
    assert bad.status == "error" and str(bad.content).startswith("grep: ")
    missing = await call(tools["grep"], pattern="x", path="nope")
    assert missing.status == "error" and "nope does not exist" in str(missing.content)


async def test_grep_cap_notice(tools: dict[str, BaseTool], tmp_path: Path) -> None:
    (tmp_path / "ws" / "many.txt").write_text("hit\n" * (MAX_MATCHES + 20))
    message = await call(tools["grep"], pattern="hit")
    lines = str(message.content).splitlines()
    assert len([line for line in lines if line.startswith("many.txt:")]) == MAX_MATCHES
    assert "more exist" in lines[-1]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
async def test_grep_in_git_repo(tools: dict[str, BaseTool], tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "ws")], check=True)
    message = await call(tools["grep"], pattern="hello", glob="*.py")
    assert message.content == "src/app.py:2:    print('hello')\nsrc/lib.py:1:HELLO = 'hello'"
