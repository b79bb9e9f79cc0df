"""The shape every media read_file result shares: one summary text block, then the attached
content (reference blocks and the text blocks that go with them).

The request projection relies on it: the summary always stays in the ToolMessage, and what
follows it moves, as a unit and in order, wherever the model's profile lets media go.
"""

from __future__ import annotations

from dcode.agent.tools.errors import fail
from dcode.agent.tools.read_file import NAME, BinaryFile
from dcode.agent.tools.result import Block

MiB = 1024 * 1024


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def media_result(summary: str, attached: list[Block]) -> list[Block]:
    return [text_block(summary), *attached]


def require_size(file: BinaryFile, cap: int, what: str, *, hint: str = "") -> None:
    """A clear error when ``file`` is over ``cap`` bytes (``what``: "audio files", "PDFs")."""
    if file.size > cap:
        fail(
            f"{NAME}: {file.display} is {megabytes(file.size)}; {what} over {megabytes(cap)} "
            f"are not read{hint}"
        )


def megabytes(size: int) -> str:
    """``20 MiB``, ``1.1 MiB``, or ``512 bytes`` under a tenth of a MiB."""
    if size % MiB == 0 and size:
        return f"{size // MiB} MiB"
    return f"{size / MiB:.1f} MiB" if size >= MiB // 10 else f"{size:,} bytes"
