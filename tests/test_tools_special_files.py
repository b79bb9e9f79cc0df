"""The file tools on named pipes and devices: refused at once with one clear line, never a read
that blocks for ever (a pipe with no writer) or never ends (``/dev/zero``).

Every call runs under a timeout, so code that blocks again fails here instead of hanging the run.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.atomic import write_atomic
from dcode.agent.backends.procs import find_program
from dcode.agent.tools import build_tools
from dcode.agent.tools.read_media import MediaReader
from dcode.agent.tools.spec import EDIT_FILE, GLOB, GREP, READ_FILE, WRITE_FILE
from dcode.media.store import AttachmentStore
from dcode.models.profiles import ModelProfile
from dcode.regular_files import NotRegularFile
from tests.support.hostile_files import fifo

PROMPTLY = 10.0  # seconds: far beyond what a refusal takes, far below "for ever"
FIFO_LINE = "is a named pipe (FIFO), not a regular file; only regular files are read or written"


def tools_for(workspace: Path, store: AttachmentStore, **backend: Any) -> dict[str, BaseTool]:
    profile = ModelProfile(image_inputs=True)
    built = build_tools(
        LocalBackend(workspace, **backend), binary_reader=MediaReader(store, profile)
    )
    return {tool.name: tool for tool in built}


@pytest.fixture
def tools(workspace: Path, tmp_path: Path) -> dict[str, BaseTool]:
    return tools_for(workspace, AttachmentStore(tmp_path / "attachments"))


async def call(tool: BaseTool, **args: Any) -> ToolMessage:
    request = {"type": "tool_call", "id": "c1", "name": tool.name, "args": args}
    message = await asyncio.wait_for(tool.ainvoke(request), PROMPTLY)
    assert isinstance(message, ToolMessage)
    return message


@pytest.mark.parametrize("name", ["notes.txt", "stuck.mp4", "shot.png"])
async def test_read_file_refuses_a_named_pipe_without_opening_it_for_good(
    workspace: Path, tools: dict[str, BaseTool], name: str
) -> None:
    fifo(workspace / name)
    message = await call(tools[READ_FILE.name], file_path=name)
    assert message.status == "error"
    assert message.content == f"{READ_FILE.name}: {name} {FIFO_LINE}"


@pytest.mark.parametrize("link", [None, "zeros.txt", "blank.png", "clip.mp4"])
async def test_read_file_refuses_a_device_by_path_or_through_a_link(
    workspace: Path, tools: dict[str, BaseTool], link: str | None
) -> None:
    if link is not None:
        (workspace / link).symlink_to("/dev/zero")
    message = await call(tools[READ_FILE.name], file_path=link or "/dev/zero")
    assert message.status == "error"
    assert message.content == (
        f"{READ_FILE.name}: /dev/zero is a character device, not a regular file; "
        "only regular files are read or written"
    )


async def test_read_file_refuses_an_empty_device_too(tools: dict[str, BaseTool]) -> None:
    message = await call(tools[READ_FILE.name], file_path="/dev/null")
    assert message.status == "error" and "/dev/null is a character device" in str(message.content)


async def test_edit_and_write_refuse_a_named_pipe_and_leave_it_be(
    workspace: Path, tools: dict[str, BaseTool]
) -> None:
    pipe = fifo(workspace / "notes.txt")
    edited = await call(
        tools[EDIT_FILE.name], file_path="notes.txt", old_string="a", new_string="b"
    )
    written = await call(tools[WRITE_FILE.name], file_path="notes.txt", content="hello\n")
    assert [edited.status, written.status] == ["error", "error"]
    assert edited.content == f"{EDIT_FILE.name}: notes.txt {FIFO_LINE}"
    assert written.content == f"{WRITE_FILE.name}: notes.txt {FIFO_LINE}"
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_an_atomic_write_never_replaces_a_pipe(tmp_path: Path) -> None:
    """Renaming a new file over the target would turn a pipe (or ``/dev/null``) into a file."""
    pipe = fifo(tmp_path / "events")
    with pytest.raises(NotRegularFile) as raised:
        write_atomic(pipe, b"data")
    assert raised.value.what == "a named pipe (FIFO)"
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events"]  # no temporary left behind


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
async def test_grep_refuses_a_named_pipe_named_as_its_path(
    workspace: Path, tmp_path: Path, engine: str
) -> None:
    if engine == "ripgrep" and find_program("rg") is None:
        pytest.skip("ripgrep is not installed")
    fifo(workspace / "notes.txt")
    tools = tools_for(workspace, AttachmentStore(tmp_path / "a"), use_ripgrep=engine == "ripgrep")
    message = await call(tools[GREP.name], pattern="x", path="notes.txt")
    assert message.status == "error"
    assert message.content == f"{GREP.name}: notes.txt {FIFO_LINE}"


async def test_the_python_search_skips_a_named_pipe_where_an_ignore_file_should_be(
    workspace: Path, tmp_path: Path
) -> None:
    fifo(workspace / ".gitignore")
    fifo(workspace / "stuck.log")
    (workspace / "a.txt").write_text("hello\n")
    tools = tools_for(workspace, AttachmentStore(tmp_path / "a"), use_ripgrep=False, use_git=False)
    found = await call(tools[GREP.name], pattern="hello")
    listed = await call(tools[GLOB.name], pattern="*.txt")
    assert (found.status, found.content) == ("success", "a.txt:1:hello")
    assert (listed.status, listed.content) == ("success", "a.txt")


def _rg_children() -> list[int]:
    """Our own ripgrep processes still running."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            name = (entry / "comm").read_text().strip()
        except (OSError, IndexError):
            continue
        if name == "rg" and int(fields[1]) == os.getpid():
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(find_program("rg") is None, reason="ripgrep is not installed")
async def test_a_search_ripgrep_cannot_finish_ends_at_the_deadline(
    workspace: Path, tmp_path: Path
) -> None:
    """ripgrep opens every ignore file it meets, and waits for ever on a named pipe there."""
    fifo(workspace / ".gitignore")
    (workspace / "a.txt").write_text("hello\n")
    tools = tools_for(workspace, AttachmentStore(tmp_path / "a"), search_deadline=1.0)
    found = await call(tools[GREP.name], pattern="hello")
    listed = await call(tools[GLOB.name], pattern="**/*.txt")
    for message, tool in ((found, GREP.name), (listed, GLOB.name)):
        assert message.status == "error"
        assert (
            message.content
            == f"{tool}: .: the search did not finish within 1 s; narrow the path or the pattern"
        )
    assert _rg_children() == []
