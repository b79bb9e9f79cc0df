"""``ls``: what is in one directory, to orient before reading or searching."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import LsArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.spec import LS

NAME = LS.name
MAX_ENTRIES = 500

DESCRIPTION = f"""List the entries of one directory (not recursive), sorted by name.

Directories end with "/". Hidden entries are included. At most {MAX_ENTRIES} entries are shown. \
To find files by name across the tree use glob; to search contents use grep."""


async def ls(backend: Backend, args: LsArgs) -> ToolOutput:
    shown = backend.display_path(args.path)
    try:
        listing = await backend.ls(args.path, max_entries=MAX_ENTRIES)
    except FileNotFoundError:
        fail(f"{NAME}: {shown} does not exist")
    except NotADirectoryError:
        fail(f"{NAME}: {shown} is a file, not a directory; use read_file to read it")
    if not listing.items:
        return f"{shown} is empty."
    text = "\n".join(listing.items)
    if listing.truncated:
        text += f"\n[{listing.total - len(listing.items)} more entries not shown]"
    return text


def make_ls_tool(backend: Backend) -> BaseTool:
    async def run(args: LsArgs) -> ToolOutput:
        return await ls(backend, args)

    return make_tool(
        LS,
        description=DESCRIPTION,
        run=run,
        display=backend.display_path,
    )
