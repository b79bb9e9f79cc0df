"""``write_file``: create a file or replace all of it."""

from __future__ import annotations

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools import names
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.formatting import count_lines, plural

NAME = names.WRITE_FILE

DESCRIPTION = """Create a file, or overwrite an existing one with new content.

- Missing parent directories are created.
- The whole file is replaced: to change part of an existing file, prefer edit_file, and read \
the file before overwriting it.
- Write the complete content; nothing is appended or merged."""


class WriteFileArgs(BaseModel):
    file_path: str = Field(
        description="File to write: relative to the workspace root, or absolute."
    )
    content: str = Field(description="The complete new content of the file.")


async def write_file(backend: Backend, args: WriteFileArgs) -> ToolOutput:
    shown = backend.display_path(args.file_path)
    existed = await backend.exists(args.file_path)
    if existed and (await backend.stat(args.file_path)).is_dir:
        fail(f"{NAME}: {shown} is a directory; give a file path")
    await backend.write_text(args.file_path, args.content)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown} ({plural(count_lines(args.content), 'line')})."


def make_write_file_tool(backend: Backend) -> BaseTool:
    async def run(args: WriteFileArgs) -> ToolOutput:
        return await write_file(backend, args)

    return make_tool(
        name=NAME,
        description=DESCRIPTION,
        args_schema=WriteFileArgs,
        run=run,
        display=backend.display_path,
    )
