"""``@path`` in a prompt: the file goes with the message, as read_file would show it.

The user's text keeps ``@path`` as typed; each file named that way is read once and added after
it: text with line numbers, in read_file's first window (2,000 lines, 80,000 characters, with
the offset to continue from), inside an ``<attached_file>`` fence; a directory as ``ls`` lists
it; an image, a PDF, an audio clip or a video through read_file's media reader, so the model's
profile decides what is sent, as for a file the model reads itself. A word after ``@`` that
names nothing (``@property``, ``@here``) stays text. What cannot be attached (a binary file, a
named pipe, a file that cannot be read, one over the limits) is one line for the user, and the
rest of the message goes as it is.

Both front ends use this: the TUI when a prompt is sent, ``dcode -p`` before the turn. In a
project's command (``headless_media.ProjectCommand``) a mention that leads outside the project
is refused unless the user typed it, as the caller's ``allowed`` says.
"""

# Any: LangChain message content: the prompt's blocks are HumanMessage content parts

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcode.agent.attached_files import AttachedFile
from dcode.agent.backends.protocol import Backend, FileInfo
from dcode.agent.fences import Fence, escape_fenced, escape_name
from dcode.agent.tools.args import LsArgs, ReadFileArgs
from dcode.agent.tools.errors import explain
from dcode.agent.tools.ls import ls
from dcode.agent.tools.media_result import megabytes
from dcode.agent.tools.read_file import BinaryFile, BinaryReader, read_file_output
from dcode.agent.tools.read_text import NumberedText
from dcode.agent.tools.spec import LS, READ_FILE
from dcode.prompts.mentions import mentioned_path, mentions

MAX_FILES = 20
"""Files one prompt attaches; the others stay mentions the model can read itself."""
MAX_TEXT_CHARS = 200_000
"""Text the attached files add to one prompt, in all."""

_NOUNS = {"image": "image", "pdf": "PDF", "audio": "audio", "video": "video"}

Allowed = Callable[[str, Path], bool]
"""Whether a mention (as written, and the path it names) may be read."""


@dataclass(frozen=True, slots=True)
class _File:
    path: str
    kind: str
    summary: str
    blocks: list[dict[str, Any]]


@dataclass(slots=True)
class Mentioned:
    """What a prompt's mentions attach, and a line for each one that could not be."""

    files: list[_File] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Mentions ``allowed`` refused, as written."""

    def attach(
        self, content: str | list[dict[str, Any]]
    ) -> tuple[str | list[dict[str, Any]], tuple[AttachedFile, ...]]:
        """``content`` with the files' blocks after it, and the records that name them."""
        if not self.files:
            return content, ()
        out = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        records: list[AttachedFile] = []
        for file in self.files:
            start = len(out)
            out.extend(file.blocks)
            records.append(
                AttachedFile(file.path, file.kind, file.summary, tuple(range(start, len(out))))
            )
        return out, tuple(records)


async def read_mentions(
    text: str,
    backend: Backend,
    reader: BinaryReader,
    *,
    allowed: Allowed | None = None,
    skip: frozenset[Path] = frozenset(),
    refusal: Callable[[str], str | None] | None = None,
) -> Mentioned:
    """Read every file ``text`` mentions (through ``backend``; media through ``reader``, read_file's
    media reader); ``skip``: paths attached another way (``-i``); ``refusal``: why a permission
    rule keeps a path from being read (None: it may be)."""
    found = Mentioned()
    seen: set[Path] = set(skip)
    chars = 0
    for raw in mentions(text):
        try:
            info = await backend.stat(str(mentioned_path(raw, backend.root)))
        except (FileNotFoundError, NotADirectoryError, ValueError):
            continue  # a word, not a file
        except OSError as exc:
            found.problems.append(f"@{raw} not attached: {_reason(exc, backend)}")
            continue
        if allowed is not None and not allowed(raw, info.path):
            found.refused.append(raw)
            continue
        if refusal is not None and (why := refusal(raw)):
            found.problems.append(f"@{raw} not attached: {why}")
            continue
        if info.path in seen:
            continue
        seen.add(info.path)
        if len(found.files) >= MAX_FILES:
            found.problems.append(
                f"@{raw} not attached: at most {MAX_FILES} files go with one message"
            )
            continue
        try:
            file = await _read(backend, info, reader)
        except Exception as exc:  # noqa: BLE001 - each file that cannot be read is one line
            found.problems.append(f"@{raw} not attached: {_reason(exc, backend)}")
            continue
        size = sum(len(block.get("text", "")) for block in file.blocks)
        if chars + size > MAX_TEXT_CHARS:
            found.problems.append(
                f"@{raw} not attached: the files already attached hold {chars:,} characters of text"
            )
            continue
        chars += size
        found.files.append(file)
    return found


async def _read(backend: Backend, info: FileInfo, reader: BinaryReader) -> _File:
    path = info.path
    shown = backend.display_path(str(path))
    if info.is_dir:
        listing = await ls(backend, LsArgs(path=str(path)))
        assert isinstance(listing, str)
        shown = shown.rstrip("/") + "/"
        return _File(
            shown, "directory", "directory listing", [_fenced(shown, "directory", listing)]
        )
    kind = _Kind(reader)
    output = await read_file_output(backend, ReadFileArgs(file_path=str(path)), kind)
    if (
        media := kind.file
    ) is not None:  # the media reader's blocks, or its text (a PDF's, for a text model)
        summary = f"{_NOUNS.get(media.kind, media.kind)}, {megabytes(media.size)}"
        if not isinstance(output, list):
            return _File(shown, media.kind, summary, [_fenced(shown, media.kind, str(output))])
        return _File(
            shown,
            media.kind,
            summary,
            [_text(_opening(shown, media.kind)), *map(_escaped, output), _text(_CLOSING)],
        )
    if isinstance(output, NumberedText):
        return _File(
            shown,
            "text",
            _lines(output.first, output.last, output.total),
            [_fenced(shown, "text", output.text)],
        )
    return _File(
        shown, "text", "empty", [_fenced(shown, "text", str(output))]
    )  # read_file says it is empty


class _Kind:
    """The file-reading tool's media reader, noting which kind of file it was handed."""

    def __init__(self, reader: BinaryReader) -> None:
        self.reader = reader
        self.file: BinaryFile | None = None

    async def __call__(self, backend: Backend, file: BinaryFile) -> Any:
        self.file = file
        return await self.reader(backend, file)


_CLOSING = f"</{Fence.ATTACHED_FILE}>"


def _opening(shown: str, kind: str) -> str:
    return f'<{Fence.ATTACHED_FILE} path="{html.escape(escape_name(shown), quote=True)}" type="{kind}">'


def _fenced(shown: str, kind: str, body: str) -> dict[str, Any]:
    """A file's text between the fence's tags, in one block."""
    return _text(f"{_opening(shown, kind)}\n{escape_fenced(body)}\n{_CLOSING}")


def _escaped(block: dict[str, Any]) -> dict[str, Any]:
    """A media result's block, its text (a PDF page's, a summary) unable to close the fence."""
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return {**block, "text": escape_fenced(block["text"])}
    return block


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _lines(first: int, last: int, total: int) -> str:
    if first == 1 and last == total:
        return "1 line" if total == 1 else f"{total:,} lines"
    return f"lines {first:,}-{last:,} of {total:,}"


def _reason(exc: Exception, backend: Backend) -> str:
    """The tool's own words for why, without its name (the user did not call a tool)."""
    text = (
        str(exc)
        if not isinstance(exc, OSError)
        else explain(READ_FILE.name, exc, backend.display_path)
    )
    for tool in (READ_FILE.name, LS.name):
        text = text.removeprefix(f"{tool}: ")
    return text
