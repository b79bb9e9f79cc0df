"""``read_file``: a file's text with line numbers, in windows the model can page through.

Line numbers let the model cite and target lines; the windows and caps keep one read from
swallowing the context. Binary files go to one replaceable function, ``reject_binary``, so a
media-aware reader (images, PDFs) can later be passed to ``make_read_file_tool`` instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import READ_DEFAULT_LIMIT, ReadFileArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.filetypes import binary_type, decode_text, media_type
from dcode.agent.tools.spec import READ_FILE

NAME = READ_FILE.name
DEFAULT_LIMIT = READ_DEFAULT_LIMIT
MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 80_000
MAX_FILE_BYTES = 32 * 1024 * 1024

DESCRIPTION = f"""Read a text file from the workspace (or an absolute path).

Output is numbered like `cat -n`: the line number, a tab, then the line. The numbers are not part \
of the file - never copy them into edit_file's old_string.
- offset: lines to skip (0 = start at line 1); limit: lines to return (default {DEFAULT_LIMIT}).
- Lines longer than {MAX_LINE_CHARS} chars are cut; output stops near {MAX_OUTPUT_CHARS:,} chars. \
When output is cut, a note at the end gives the offset to continue from.
- Read a file before editing it. Use ls for directories, grep/glob to find files.
- Binary files (images, PDFs, archives) cannot be read as text."""


@dataclass(frozen=True, slots=True)
class BinaryFile:
    """What a binary reader is told about the file it was handed."""

    path: str
    display: str
    mime: str
    size: int


BinaryReader = Callable[[Backend, BinaryFile], Awaitable[ToolOutput]]


async def reject_binary(backend: Backend, file: BinaryFile) -> ToolOutput:
    """Until media input lands: say what the file is, as an error."""
    what = f"{NAME}: {file.display} is a binary file ({file.mime})"
    if media_type(file.path):
        fail(f"{what}; media reading is not supported yet")
    fail(f"{what}; read_file only shows text")


async def read_file(
    backend: Backend, args: ReadFileArgs, binary_reader: BinaryReader
) -> ToolOutput:
    shown = backend.display_path(args.file_path)
    try:
        info = await backend.stat(args.file_path)
    except FileNotFoundError:
        fail(f"{NAME}: {shown} does not exist (use glob or ls to find the right path)")
    if info.is_dir:
        fail(f"{NAME}: {shown} is a directory, not a file; use ls to list it")
    if info.size > MAX_FILE_BYTES:
        fail(
            f"{NAME}: {shown} is {info.size / 1024 / 1024:.0f} MB, too large to read; "
            "use grep to find the relevant lines, or execute with head/tail/sed -n"
        )
    if mime := media_type(args.file_path):
        return await binary_reader(backend, BinaryFile(args.file_path, shown, mime, info.size))
    data = await backend.read_bytes(args.file_path)
    if not data:
        return f"{shown} exists but is empty (0 bytes)."
    text = decode_text(data)
    if text is None:
        mime = binary_type(args.file_path)
        return await binary_reader(backend, BinaryFile(args.file_path, shown, mime, info.size))
    offset, limit = line_window(args)
    return number_lines(text, shown, offset=offset, limit=limit)


def line_window(args: ReadFileArgs) -> tuple[int, int]:
    """``offset`` and ``limit`` as line counts (the schema takes seconds too, for videos)."""
    offset, limit = args.offset, DEFAULT_LIMIT if args.limit is None else args.limit
    if offset < 0 or offset != int(offset):
        fail(f"{NAME}: offset must be a whole number of lines, 0 or more; got {offset:g}")
    if limit < 1 or limit != int(limit):
        fail(f"{NAME}: limit must be a whole number of lines, 1 or more; got {limit:g}")
    return int(offset), int(limit)


def split_lines(text: str) -> list[str]:
    """Lines as grep and editors count them: split on ``\\n`` only, no phantom last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def number_lines(text: str, shown: str, *, offset: int, limit: int) -> str:
    lines = split_lines(text)
    total = len(lines)
    if offset >= total:
        fail(f"{NAME}: offset {offset} is past the end of {shown}, which has {total} lines")
    rendered: list[str] = []
    size = 0
    capped = False
    for number, line in enumerate(lines[offset : offset + limit], start=offset + 1):
        entry = f"{number:>6}\t{_clip(line)}"
        if rendered and size + len(entry) + 1 > MAX_OUTPUT_CHARS:
            capped = True
            break
        rendered.append(entry)
        size += len(entry) + 1
    last = offset + len(rendered)
    if last < total:
        why = f" (output capped at {MAX_OUTPUT_CHARS:,} chars)" if capped else ""
        rendered.append(
            f"\n[Showing lines {offset + 1}-{last} of {total}{why}. "
            f"To continue, call read_file with offset={last}.]"
        )
    return "\n".join(rendered)


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line truncated, {len(line) - MAX_LINE_CHARS} more chars]"


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
