"""``write_file``: create a file or replace all of it."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import WriteFileArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import make_tool
from dcode.agent.tools.formatting import count_lines, plural
from dcode.agent.tools.result import ToolResult
from dcode.agent.tools.spec import WRITE_FILE

NAME = WRITE_FILE.name

DESCRIPTION = """Create a file, or overwrite an existing one with new content.

- Missing parent directories are created.
- The whole file is replaced: to change part of an existing file, prefer edit_file, and read \
the file before overwriting it.
- Write the complete content; nothing is appended or merged."""


async def write_file(backend: Backend, args: WriteFileArgs) -> ToolResult:
    """The result, with the diff of the write (saved beside it, see ``diffs``)."""
    shown = backend.display_path(args.file_path)
    existed = await backend.exists(args.file_path)
    if existed and (await backend.stat(args.file_path)).is_dir:
        fail(f"{NAME}: {shown} is a directory; give a file path")
    diff = ""
    try:
        before = await backend.read_text(args.file_path) if existed else None
    except (OSError, UnicodeDecodeError):
        pass  # not readable text: it is replaced all the same, but no diff can show how
    else:
        diff = WRITE_FILE.diff(args.model_dump(), before, shown)
    await backend.write_text(args.file_path, args.content)
    verb = "Overwrote" if existed else "Created"
    return ToolResult(f"{verb} {shown} ({plural(count_lines(args.content), 'line')}).", diff=diff)


def make_write_file_tool(backend: Backend) -> BaseTool:
    async def run(args: WriteFileArgs) -> ToolResult:
        return await write_file(backend, args)

    return make_tool(
        WRITE_FILE,
        description=DESCRIPTION,
        run=run,
        display=backend.display_path,
    )
