"""``glob``: find files by path pattern, most recently modified first."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import GlobArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.spec import GLOB

NAME = GLOB.name
MAX_RESULTS = 200

DESCRIPTION = f"""Find files whose path matches a glob pattern. Returns paths (relative to the \
workspace root), most recently modified first.

- The pattern is matched against the path relative to `path`: `*` stays within one directory, \
`**` spans any number of directories, `{{a,b}}` gives alternatives. So `*.py` only matches files \
directly in `path`; use `**/*.py` for all Python files below it, `src/**/*.{{ts,tsx}}` for \
a subtree.
- Files ignored by .gitignore and the .git directory are skipped. Only files are returned, \
never directories.
- At most {MAX_RESULTS} paths are shown. To search file contents use grep."""


async def glob(backend: Backend, args: GlobArgs) -> ToolOutput:
    if not args.pattern.strip():
        fail(f"{NAME}: the pattern is empty")
    shown = backend.display_path(args.path)
    try:
        listing = await backend.glob(args.pattern, args.path, max_results=MAX_RESULTS)
    except FileNotFoundError:
        fail(f"{NAME}: {shown} does not exist")
    except NotADirectoryError:
        fail(f"{NAME}: {shown} is not a directory")
    if not listing.items:
        return f"No files match {args.pattern!r} under {shown}."
    text = "\n".join(listing.items)
    if listing.truncated:
        hidden = listing.total - len(listing.items)
        text += f"\n[{hidden} more matching files not shown; narrow the pattern or path]"
    return text


def make_glob_tool(backend: Backend) -> BaseTool:
    async def run(args: GlobArgs) -> ToolOutput:
        return await glob(backend, args)

    return make_tool(
        GLOB,
        description=DESCRIPTION,
        run=run,
        display=backend.display_path,
    )
