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
    assert (file.path, file.display, file.mime, file.size, file.kind) == (
        "p.png",
        "p.png",
        "image/png",
        8,
        "image",
    )
    assert file.args is not None and file.args.file_path == "p.png"


async def test_plain_ainvoke_returns_error_text(read_file: BaseTool) -> None:
    assert "does not exist" in await read_file.ainvoke({"file_path": "missing.txt"})


# --- streaming: a window of a large file, never the whole file at once


class Recording(LocalBackend):
    """A local backend that serves small chunks, counts them, and refuses whole-file reads."""

    def __init__(self, root: Path, chunk_size: int) -> None:
        super().__init__(root)
        self.chunk_size = chunk_size
        self.chunks = 0
        self.largest = 0

    async def read_bytes(self, path: str) -> bytes:
        raise AssertionError("read_file loaded the whole file")

    async def read_text(self, path: str) -> str:
        raise AssertionError("read_file loaded the whole file")

    async def read_chunks(self, path: str, *, chunk_size: int = 0) -> AsyncIterator[bytes]:
        async for chunk in super().read_chunks(path, chunk_size=self.chunk_size):
            self.chunks += 1
            self.largest = max(self.largest, len(chunk))
            yield chunk


async def test_a_large_file_is_streamed_in_chunks(tmp_path: Path) -> None:
    lines = 300_000
    (tmp_path / "big.log").write_bytes(b"".join(b"entry %d\n" % n for n in range(1, lines + 1)))
    size = (tmp_path / "big.log").stat().st_size
    backend = Recording(tmp_path, chunk_size=64 * 1024)
    text = str(
        (
            await call(make_read_file_tool(backend), file_path="big.log", offset=150_000, limit=3)
        ).content
    )
    assert text == (
        "150001\tentry 150001\n150002\tentry 150002\n150003\tentry 150003\n\n"
        f"[Showing lines 150001-150003 of {lines}. To continue, call read_file with offset=150003.]"
    )
    assert backend.largest <= 64 * 1024 and backend.chunks >= size // (64 * 1024)


def old_number_lines(text: str, offset: int, limit: int) -> str:
    """What read_file printed when it loaded the whole file (the behaviour streaming keeps)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.removesuffix("\r") for line in lines]
    rendered: list[str] = []
    size = 0
    capped = False
    for number, line in enumerate(lines[offset : offset + limit], start=offset + 1):
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}… [line truncated, {len(line) - MAX_LINE_CHARS} more chars]"
        entry = f"{number:>6}\t{line}"
        if rendered and size + len(entry) + 1 > MAX_OUTPUT_CHARS:
            capped = True
            break
        rendered.append(entry)
        size += len(entry) + 1
    last = offset + len(rendered)
    if last < len(lines):
        why = f" (output capped at {MAX_OUTPUT_CHARS:,} chars)" if capped else ""
        rendered.append(
            f"\n[Showing lines {offset + 1}-{last} of {len(lines)}{why}. To continue, call read_file with offset={last}.]"
        )
    return "\n".join(rendered)


SAMPLES = {
    "crlf": "one\r\ntwo\r\n\r\nthree\r",
    "no final newline": "a\nb\nc",
    "blank lines": "\n\n\nx\n\n",
    "long ascii": ("z" * 5000 + "\n") * 3 + "tail",
    "long with crlf": "q" * 2500 + "\r\nshort\r\n",
    "long multibyte": ("é€𝄞" * 1500 + "\n") * 2,
    "exactly the clip": "w" * MAX_LINE_CHARS + "\n" + "v" * (MAX_LINE_CHARS + 1) + "\r\n",
    "over the output cap": ("y" * 199 + "\n") * 1000,
    "unicode lines": "".join(f"línea {n} — ✓\n" for n in range(300)),
}


@pytest.mark.parametrize("chunk_size", [1, 7, 4096])
@pytest.mark.parametrize("name", list(SAMPLES))
async def test_streaming_prints_what_loading_printed(
    tmp_path: Path, name: str, chunk_size: int
) -> None:
    """Chunk boundaries anywhere: inside a line end, a multibyte character, a clipped line."""
    text = SAMPLES[name]
    (tmp_path / "f.txt").write_bytes(text.encode())
    if len(text.encode()) > 4000:
        chunk_size = chunk_size * 101  # still cut everywhere, in fewer round trips
    tool = make_read_file_tool(Recording(tmp_path, chunk_size))
    total = len(old_number_lines(text, 0, 10**9).splitlines())
    for offset, limit in ((0, 2000), (1, 2), (2, 1), (0, 10**6)):
        if offset >= total:
            continue
        message = await call(tool, file_path="f.txt", offset=offset, limit=limit)
        assert message.content == old_number_lines(text, offset, limit), (offset, limit)


async def test_bad_utf8_after_the_first_8_kib_is_replaced_and_said(
    backend: LocalBackend, read_file: BaseTool
) -> None:
    (backend.root / "mixed.txt").write_bytes(b"ok\n" * 4000 + b"caf\xe9\n" + b"end\n")
    text = str((await call(read_file, file_path="mixed.txt", offset=3999)).content)
    assert text == (
        "  4000\tok\n  4001\tcaf\ufffd\n  4002\tend\n"
        "[Some bytes in these lines are not valid UTF-8; they are shown as \ufffd.]"
    )
    clean = str((await call(read_file, file_path="mixed.txt", offset=0, limit=3)).content)
    assert "not valid UTF-8" not in clean and "of 4002" in clean


async def test_text_over_the_old_32_mib_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with path.open("wb") as out:
        block = b"x" * 1023 + b"\n"
        for _ in range(33 * 1024):
            out.write(block)
    message = await call(make_read_file_tool(LocalBackend(tmp_path)), file_path="huge.log", limit=1)
    assert message.status == "success"
    assert str(message.content).endswith(
        f"[Showing lines 1-1 of {33 * 1024}. To continue, call read_file with offset=1.]"
    )
