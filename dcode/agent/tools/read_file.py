"""``read_file``: a file's text with line numbers, in windows the model can page through; or,
for an image, a PDF, an audio clip or a video, what the configured model can take of it.

Line numbers let the model cite and target lines; the windows and caps keep one read from
swallowing the context (``read_text`` streams the file, so a huge log costs a few chunks).
What a file is comes from its first bytes and its name (``filetypes.classify``). Everything that
is not text goes to one replaceable function, the binary reader: ``reject_binary`` refuses it
(a tool set built without an attachment store), ``read_media.MediaReader`` reads it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import PDF_MAX_PAGES, READ_DEFAULT_LIMIT, ReadFileArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.filetypes import SNIFF_BYTES, Kind, classify
from dcode.agent.tools.read_text import (
    MAX_LINE_CHARS,
    MAX_OUTPUT_CHARS,
    NumberedText,
    numbered_text,
)
from dcode.agent.tools.spec import READ_FILE

NAME = READ_FILE.name
DEFAULT_LIMIT = READ_DEFAULT_LIMIT
MAX_TEXT_BYTES = 1024 * 1024 * 1024
"""Text over this is not scanned (counting its lines alone would take a while)."""

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_OUTPUT_CHARS",
    "BinaryFile",
    "BinaryReader",
    "make_read_file_tool",
    "read_file",
    "read_file_output",
    "reject_binary",
]

DESCRIPTION = f"""Read a file from the workspace (or an absolute path): text, images, PDFs, audio, video.

Text is numbered like `cat -n`: the line number, a tab, then the line. The numbers are not part \
of the file - never copy them into edit_file's old_string.
- offset: lines to skip (0 = start at line 1); limit: lines to return (default {DEFAULT_LIMIT}).
- Lines longer than {MAX_LINE_CHARS} chars are cut; output stops near {MAX_OUTPUT_CHARS:,} chars. \
When output is cut, a note at the end gives the offset to continue from.
- Read a file before editing it. Use ls for directories, grep/glob to find files.

Media:
- Images (png, jpg, webp, gif...) are shown to you.
- PDF: pages="3" or "1-5" (at most {PDF_MAX_PAGES} per call; default the first {PDF_MAX_PAGES}). \
You get the pages as a document, as page images or as their text, whichever this model takes.
- Audio (wav, mp3, flac...) is attached as audio.
- Video: frames sampled every 2 s; offset and limit are seconds (default 0 and 100). A note gives \
the offset to continue from.
Other binary files (archives, executables) cannot be read."""


@dataclass(frozen=True, slots=True)
class BinaryFile:
    """What a binary reader is told about the file it was handed."""

    path: str
    display: str
    mime: str
    size: int
    kind: Kind = "binary"
    args: ReadFileArgs | None = None


BinaryReader = Callable[[Backend, BinaryFile], Awaitable[ToolOutput]]


async def reject_binary(backend: Backend, file: BinaryFile) -> ToolOutput:
    """Without an attachment store to read media into: say what the file is, as an error."""
    what = f"{NAME}: {file.display} is a binary file ({file.mime})"
    if file.kind != "binary":
        fail(f"{what}; media reading is not supported yet")
    fail(f"{what}; read_file only shows text")


async def read_file(
    backend: Backend, args: ReadFileArgs, binary_reader: BinaryReader
) -> ToolOutput:
    output = await read_file_output(backend, args, binary_reader)
    return output.text if isinstance(output, NumberedText) else output


async def read_file_output(
    backend: Backend, args: ReadFileArgs, binary_reader: BinaryReader
) -> ToolOutput | NumberedText:
    """What read_file shows of the file, with a text window's facts kept (a prompt's ``@path``
    says how many lines it attached)."""
    shown = backend.display_path(args.file_path)
    try:
        info = await backend.stat(args.file_path)
    except FileNotFoundError:
        fail(f"{NAME}: {shown} does not exist (use glob or ls to find the right path)")
    if info.is_dir:
        fail(f"{NAME}: {shown} is a directory, not a file; use ls to list it")
    async with aclosing(backend.read_chunks(args.file_path)) as chunks:
        head, complete = await _head(chunks)
        if not head:
            return f"{shown} exists but is empty (0 bytes)."
        filetype = classify(args.file_path, head, complete=complete)
        if filetype.kind == "text":
            if info.size > MAX_TEXT_BYTES:
                fail(
                    f"{NAME}: {shown} is {info.size / 1024 / 1024:.0f} MB, too large to read; "
                    "use grep to find the relevant lines, or execute with head/tail/sed -n"
                )
            offset, limit = line_window(args)
            return await numbered_text(_chained(head, chunks), shown, offset=offset, limit=limit)
    file = BinaryFile(args.file_path, shown, filetype.mime, info.size, filetype.kind, args)
    return await binary_reader(backend, file)


async def _head(chunks: AsyncIterator[bytes]) -> tuple[bytes, bool]:
    """At least the first ``SNIFF_BYTES`` (all of a smaller file), and whether that is all."""
    head = b""
    async for chunk in chunks:
        head += chunk
        if len(head) >= SNIFF_BYTES:
            return head, False
    return head, True


async def _chained(head: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield head
    async for chunk in rest:
        yield chunk


def line_window(args: ReadFileArgs) -> tuple[int, int]:
    """``offset`` and ``limit`` as line counts (the schema takes seconds too, for videos)."""
    offset, limit = args.offset, DEFAULT_LIMIT if args.limit is None else args.limit
    if offset < 0 or offset != int(offset):
        fail(f"{NAME}: offset must be a whole number of lines, 0 or more; got {offset:g}")
    if limit < 1 or limit != int(limit):
        fail(f"{NAME}: limit must be a whole number of lines, 1 or more; got {limit:g}")
    return int(offset), int(limit)


def make_read_file_tool(
    backend: Backend, *, binary_reader: BinaryReader = reject_binary
) -> BaseTool:
    async def run(args: ReadFileArgs) -> ToolOutput:
        return await read_file(backend, args, binary_reader)

    return make_tool(
        READ_FILE,
        description=DESCRIPTION,
        run=run,
        display=backend.display_path,
    )
