"""read_file through the real LangChain tool interface."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from dcode.agent.backends import Backend, LocalBackend
from dcode.agent.tools import build_tools
from dcode.agent.tools.read_file import (
    MAX_LINE_CHARS,
    MAX_OUTPUT_CHARS,
    BinaryFile,
    make_read_file_tool,
)


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(tmp_path)


@pytest.fixture
def read_file(backend: LocalBackend) -> BaseTool:
    return next(t for t in build_tools(backend) if t.name == "read_file")


async def call(tool: BaseTool, **args: Any) -> ToolMessage:
    message = await tool.ainvoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    return message


async def test_lines_are_numbered_cat_n_style(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "a.py").write_text("first\n\tindented\nlast")
    message = await call(read_file, file_path="a.py")
    assert message.status == "success"
    assert message.content == "     1\tfirst\n     2\t\tindented\n     3\tlast"


async def test_offset_and_limit(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    text = (await call(read_file, file_path="n.txt", offset=10, limit=5)).content
    assert isinstance(text, str)
    lines = text.splitlines()
    assert lines[:5] == [f"{i:>6}\tline {i}" for i in range(11, 16)]
    assert "Showing lines 11-15 of 100" in text
    assert "offset=15" in text


async def test_reading_to_the_end_has_no_notice(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "n.txt").write_text("a\nb\nc\n")
    text = (await call(read_file, file_path="n.txt", offset=1)).content
    assert text == "     2\tb\n     3\tc"


async def test_offset_past_end_is_an_error(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "n.txt").write_text("a\nb\n")
    message = await call(read_file, file_path="n.txt", offset=5)
    assert message.status == "error"
    assert "offset 5 is past the end" in str(message.content) and "2 lines" in str(message.content)


async def test_long_lines_are_clipped(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "wide.txt").write_text("x" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    text = str((await call(read_file, file_path="wide.txt")).content)
    first, second = text.splitlines()
    assert first.endswith("[line truncated, 500 more chars]")
    assert len(first) < MAX_LINE_CHARS + 60
    assert second == "     2\tshort"


async def test_total_output_is_capped_on_a_line_boundary(
    backend: LocalBackend, read_file: BaseTool
) -> None:
    line = "y" * 199
    (backend.root / "big.txt").write_text((line + "\n") * 1000)
    text = str((await call(read_file, file_path="big.txt")).content)
    body, notice = text.rsplit("\n\n", 1)
    assert len(body) <= MAX_OUTPUT_CHARS
    shown = body.splitlines()
    assert all(row.endswith(line) for row in shown)
    assert f"Showing lines 1-{len(shown)} of 1000" in notice
    assert f"offset={len(shown)}" in notice
    assert "capped" in notice


async def test_empty_file(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "empty.txt").write_text("")
    message = await call(read_file, file_path="empty.txt")
    assert message.status == "success"
    assert "exists but is empty" in str(message.content)


async def test_crlf_is_shown_without_carriage_returns(
    backend: LocalBackend, read_file: BaseTool
) -> None:
    (backend.root / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    assert (await call(read_file, file_path="dos.txt")).content == "     1\tone\n     2\ttwo"


@pytest.mark.parametrize(
    ("name", "data", "mime"),
    [
        ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
        ("clip.mp4", b"\x00\x00\x00\x18ftypmp42", "video/mp4"),
        ("voice.mp3", b"ID3\x03\x00", "audio/mpeg"),
        ("paper.pdf", b"%PDF-1.7\n", "application/pdf"),
    ],
)
async def test_media_files_are_refused_clearly(
    backend: LocalBackend, read_file: BaseTool, name: str, data: bytes, mime: str
) -> None:
    (backend.root / name).write_bytes(data)
    message = await call(read_file, file_path=name)
    assert message.status == "error"
    assert message.content == (
        f"read_file: {name} is a binary file ({mime}); media reading is not supported yet"
    )


async def test_binary_content_is_detected(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "blob.dat").write_bytes(b"abc\x00def")
    (backend.root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    for name in ("blob.dat", "latin.txt"):
        message = await call(read_file, file_path=name)
        assert message.status == "error"
        assert f"{name} is a binary file" in str(message.content)


async def test_typescript_and_svg_read_as_text(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "a.ts").write_text("const x = 1;\n")
    (backend.root / "i.svg").write_text("<svg/>\n")
    assert (await call(read_file, file_path="a.ts")).content == "     1\tconst x = 1;"
    assert (await call(read_file, file_path="i.svg")).content == "     1\t<svg/>"


async def test_missing_file(read_file: BaseTool) -> None:
    message = await call(read_file, file_path="nope/missing.py")
    assert message.status == "error"
    assert "nope/missing.py does not exist" in str(message.content)


async def test_directory(backend: LocalBackend, read_file: BaseTool) -> None:
    (backend.root / "pkg").mkdir()
    message = await call(read_file, file_path="pkg")
    assert message.status == "error"
    assert "pkg is a directory" in str(message.content) and "ls" in str(message.content)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read anything")
async def test_permission_denied(backend: LocalBackend, read_file: BaseTool) -> None:
    secret = backend.root / "secret.txt"
    secret.write_text("x")
    secret.chmod(0)
    message = await call(read_file, file_path="secret.txt")
    assert message.status == "error"
    assert "permission denied" in str(message.content)


async def test_permission_denied_is_reported(tmp_path: Path) -> None:
    class Unreadable(LocalBackend):
        async def read_chunks(self, path: str, *, chunk_size: int = 1) -> AsyncIterator[bytes]:
            raise PermissionError(13, "Permission denied", str(self.resolve(path)))
            yield b""

    backend = Unreadable(tmp_path)
    (tmp_path / "secret.txt").write_text("x")
    tool = make_read_file_tool(backend)
    message = await call(tool, file_path="secret.txt")
    assert message.status == "error"
    assert message.content == "read_file: permission denied: secret.txt"


async def test_absolute_paths_outside_workspace_are_readable(
    tmp_path: Path, read_file: BaseTool
) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("hello\n")
    try:
        assert (await call(read_file, file_path=str(outside))).content == "     1\thello"
    finally:
        outside.unlink()


async def test_binary_reader_is_replaceable(backend: LocalBackend) -> None:
    seen: list[BinaryFile] = []

    async def describe(_: Backend, file: BinaryFile) -> str:
        seen.append(file)
        return f"an image of {file.size} bytes"

    (backend.root / "p.png").write_bytes(b"\x89PNG....")
    tool = make_read_file_tool(backend, binary_reader=describe)
    message = await call(tool, file_path="p.png")
    assert message.status == "success" and message.content == "an image of 8 bytes"
    [file] = seen
    assert (file.path, file.display, file.mime, file.size, file.kind) == ("p.png", "p.png", "image/png", 8, "image")
    assert file.args is not None and file.args.file_path == "p.png"


async def test_plain_ainvoke_returns_error_text(read_file: BaseTool) -> None:
    assert "does not exist" in await read_file.ainvoke({"file_path": "missing.txt"})
