"""What a write changes, as a unified diff: proposed before it runs, recorded once it has.

The approval shows the proposed diff, computed from the file on disk without writing. The write
tools compute the same diff, with the same function (the tool spec's preview), from the text
they read and replaced, and return it as the tool message's artifact: it is saved with the
session but never sent to the model. The finished call and a resumed session show that record,
so they agree with each other and with the approval, even after the file has changed again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from dcode.agent.tools.spec import Args, spec_for

if TYPE_CHECKING:
    from dcode.agent.backends.protocol import Backend


class DiffRecord(TypedDict):
    """A write's artifact (a plain dict, so that any checkpoint serializer keeps it)."""

    diff: str


async def text_before(backend: Backend, path: str) -> str | None:
    """The file's text before a write; ``None`` when there is no file yet. Raises what the
    backend raises for a directory or a file that is not UTF-8 text."""
    if not await backend.exists(path):
        return None
    return await backend.read_text(path)


async def proposed_diff(backend: Backend, name: str, args: Args) -> str:
    """The diff ``name(**args)`` would apply; ``""`` for tools that write no file, or when it
    cannot apply."""
    spec = spec_for(name)
    targets = spec.target_paths(args)
    if spec.preview is None or len(targets) != 1:
        return ""
    try:
        before = await text_before(backend, targets[0])
    except (OSError, UnicodeDecodeError):
        return ""
    return spec.diff(args, before, backend.display_path(targets[0]))


# A write's diff is saved in every later checkpoint of the session; a new 10 MB file would
# otherwise be saved twice over (its arguments, then its diff). The screen shows far less.
RECORDED_DIFF_LINES = 2_000
RECORDED_DIFF_CHARS = 200_000


def diff_record(diff: str) -> DiffRecord | None:
    """What a write saves of its diff: all of it, or its head and a line saying how much more
    there was (a line no diff reader takes for a change)."""
    if not diff:
        return None
    lines = diff.splitlines(keepends=True)
    kept: list[str] = []
    size = 0
    for line in lines[:RECORDED_DIFF_LINES]:
        if size + len(line) > RECORDED_DIFF_CHARS:
            break
        kept.append(line)
        size += len(line)
    rest = lines[len(kept) :]
    if not rest:
        return DiffRecord(diff=diff)
    added = sum(1 for line in rest if line.startswith("+"))
    removed = sum(1 for line in rest if line.startswith("-"))
    count = len(rest)
    note = f"… {count:,} more diff line{'s' if count != 1 else ''} not kept (+{added:,} -{removed:,})\n"
    return DiffRecord(diff="".join(kept) + note)
