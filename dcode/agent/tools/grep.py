"""``grep``: search file contents by regex across the workspace."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import GrepArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.formatting import join_capped
from dcode.agent.tools.spec import GREP

NAME = GREP.name
MAX_MATCHES = 500
MAX_OUTPUT_CHARS = 40_000

DESCRIPTION = f"""Search file contents with a regular expression. Prints matching lines as \
`path:line:text`, paths relative to the workspace root, in path order.

- pattern: a regex (ripgrep / Python syntax), case-sensitive; prefix `(?i)` to ignore case. \
Escape regex characters to search for them literally, e.g. `foo\\(`.
- path: a directory to search under, or a single file.
- glob: only search files matching it, e.g. `*.py` (a pattern without `/` matches the file name \
at any depth), `src/**/*.ts` (relative to path), `*.{{js,ts}}`; a leading `!` excludes.
- .gitignore'd files, .git and binary files are skipped. At most {MAX_MATCHES} lines are shown; \
long lines are cut. To find files by name use glob."""


async def grep(backend: Backend, args: GrepArgs) -> ToolOutput:
    if not args.pattern:
        fail(f"{NAME}: the pattern is empty")
    shown = backend.display_path(args.path)
    try:
        result = await backend.grep(
            args.pattern, args.path, glob=args.glob or None, max_matches=MAX_MATCHES
        )
    except FileNotFoundError:
        fail(f"{NAME}: {shown} does not exist")
    if not result.matches:
        where = f"{shown} ({args.glob})" if args.glob else shown
        return f"No matches for {args.pattern!r} in {where}."
    text, left_out = join_capped([m.format() for m in result.matches], MAX_OUTPUT_CHARS)
    if left_out:
        text += f"\n[{left_out} more matching lines not shown (output limit); narrow the search]"
    if result.truncated:
        text += (
            f"\n[Stopped after {MAX_MATCHES} matches; more exist. "
            "Narrow the pattern, path or glob.]"
        )
    return text


def make_grep_tool(backend: Backend) -> BaseTool:
    async def run(args: GrepArgs) -> ToolOutput:
        return await grep(backend, args)

    return make_tool(
        GREP,
        description=DESCRIPTION,
        run=run,
        display=backend.display_path,
    )
