"""``edit_file``: replace an exact string in a file, once or everywhere."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import EditFileArgs
from dcode.agent.tools.editing import EditError, apply_edit
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import make_tool
from dcode.agent.tools.formatting import plural
from dcode.agent.tools.result import ToolResult
from dcode.agent.tools.spec import EDIT_FILE

NAME = EDIT_FILE.name

DESCRIPTION = """Replace exact text in an existing file.

- old_string must match the file exactly, including whitespace and indentation, and must occur \
exactly once; quote a few surrounding lines to make it unique. Do not include read_file's \
line-number prefixes.
- replace_all=true replaces every occurrence instead (e.g. renaming a variable).
- Read the file first. To create a file or rewrite it entirely, use write_file."""


async def edit_file(backend: Backend, args: EditFileArgs) -> ToolResult:
    """The result, with the diff of the edit (saved beside it, see ``diffs``)."""
    shown = backend.display_path(args.file_path)
    try:
        text = await backend.read_text(args.file_path)
    except FileNotFoundError:
        fail(f"{NAME}: {shown} does not exist; use write_file to create a new file")
    except IsADirectoryError:
        fail(f"{NAME}: {shown} is a directory, not a file")
    except UnicodeDecodeError:
        fail(f"{NAME}: {shown} is not UTF-8 text; edit_file only edits text files")
    try:
        outcome = apply_edit(text, args.old_string, args.new_string, replace_all=args.replace_all)
    except EditError as exc:
        fail(f"{NAME}: {shown}: {exc}")
    await backend.write_text(args.file_path, outcome.text)
    # The approval's preview function, on the text just replaced: the same diff it showed.
    diff = EDIT_FILE.diff(args.model_dump(), text, shown)
    return ToolResult(f"Edited {shown}: {plural(outcome.replacements, 'replacement')}.", diff=diff)


def make_edit_file_tool(backend: Backend) -> BaseTool:
    async def run(args: EditFileArgs) -> ToolResult:
        return await edit_file(backend, args)

    return make_tool(
        EDIT_FILE,
        description=DESCRIPTION,
        run=run,
        display=backend.display_path,
    )
