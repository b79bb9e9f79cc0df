"""Files the user attached to a prompt with ``@path``, as the prompt's message records them.

The message's content holds each file as read_file would show it (numbered text, a directory
listing, or media blocks), after the user's own text, which keeps the ``@path`` as typed. Which
blocks are attachments is said by an explicit mark in the message's ``additional_kwargs``
(``ATTACHED_FILES_MARKER``: one record a file, naming its blocks), never by their text: the
live transcript and a replayed one both show the user's text and one ``📎`` line a file, read
off the same records. langchain sends no ``additional_kwargs`` of a user message to the model.
This module imports nothing heavy, so reading a saved thread does not pull in the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from dcode.agent.markers import ATTACHED_FILES_MARKER

ATTACHMENT_MARK = "📎"


@dataclass(frozen=True, slots=True)
class AttachedFile:
    """One ``@path`` attached to a prompt."""

    path: str
    """As shown to the user (relative to the workspace when inside it)."""
    kind: str
    """``text``, ``directory``, ``image``, ``pdf``, ``audio`` or ``video``."""
    summary: str
    """What was attached, in a few words: ``120 lines``, ``lines 1-2000 of 9000``, ``12 entries``."""
    blocks: tuple[int, ...]
    """Indices of its blocks in the message's content."""

    def line(self) -> str:
        """``main.py (120 lines)``: the transcript's line for it, after the mark."""
        return f"{self.path} ({self.summary})"

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "blocks": list(self.blocks)}


def marker(files: Iterable[AttachedFile]) -> dict[str, object]:
    """The ``additional_kwargs`` that record ``files`` on their message (empty for none)."""
    records = [file.to_json() for file in files]
    return {ATTACHED_FILES_MARKER: records} if records else {}


def attached_in(additional_kwargs: Mapping[str, object]) -> list[AttachedFile]:
    """The files a message records; a damaged record is left out, never an error."""
    records = additional_kwargs.get(ATTACHED_FILES_MARKER)
    found: list[AttachedFile] = []
    for record in records if isinstance(records, list) else []:
        try:
            blocks = tuple(int(index) for index in record["blocks"])
            found.append(
                AttachedFile(
                    str(record["path"]), str(record["kind"]), str(record["summary"]), blocks
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return found


def attached_blocks(additional_kwargs: Mapping[str, object]) -> frozenset[int]:
    """Indices of the content blocks that are attached files, not the user's words."""
    return frozenset(index for file in attached_in(additional_kwargs) for index in file.blocks)


def attachment_lines(files: Iterable[AttachedFile]) -> tuple[str, ...]:
    """The transcript's lines for ``files``. A video has its own line (its frames), not this."""
    return tuple(file.line() for file in files if file.kind != "video")
