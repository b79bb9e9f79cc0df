"""A huge user message (a paste) archived to a file, and a preview in its place.

A message whose text is over ``PASTE_CHARS`` is written to
``$DCODE_HOME/conversation_history/{uuid}.md`` before it enters the thread; the thread (the
checkpoint, every request, a resumed transcript) holds a note with the file's path and the
head/tail preview (``dcode.agent.large_results``), which the model can read on by offset and
limit. The runner does this where the prompt enters the graph, so no checkpoint ever holds the
paste whole. If the archive cannot be written, the message goes in whole: it is never lost.
In a message with attachments, each text block is judged alone; the media blocks stay.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from dcode.agent.large_results import save_text, saved_note

PASTE_CHARS: Final = 200_000

Content = str | list[dict[str, object]]


@dataclass(frozen=True, slots=True)
class Archived:
    """A message as it goes into the thread, and what was archived of it."""

    content: Content
    paths: tuple[Path, ...] = ()
    failed: tuple[str, ...] = field(default=())
    """The reasons text over the limit could not be archived (it was kept whole)."""


def paste_note(text: str, path: Path) -> str:
    return saved_note("The user's message was too large for the conversation", text, path)


def _archive(text: str, directory: Path, paths: list[Path], failed: list[str]) -> str:
    if len(text) <= PASTE_CHARS:
        return text
    path = directory / f"{uuid.uuid4()}.md"
    if not save_text(path, text):
        failed.append(
            f"could not archive a {len(text):,}-char message to {directory}: it was sent whole"
        )
        return text
    paths.append(path)
    return paste_note(text, path)


def archive_paste(content: Content, directory: Path) -> Archived:
    """``content`` with each text over ``PASTE_CHARS`` archived under ``directory`` and
    replaced by its note. Writes files: call it off the event loop."""
    paths: list[Path] = []
    failed: list[str] = []
    if isinstance(content, str):
        out: Content = _archive(content, directory, paths, failed)
    else:
        out = [
            {**block, "text": _archive(text, directory, paths, failed)}
            if block.get("type") == "text" and isinstance(text := block.get("text"), str)
            else block
            for block in content
        ]
    return Archived(out if paths else content, tuple(paths), tuple(failed))
