"""A text file's lines, numbered like ``cat -n``, read as a stream.

Only the lines of the window (``offset``, ``limit``) are decoded and kept, each clipped as it
is read; the rest of the file is scanned in chunks to count its lines for the continuation
hint. So reading 2,000 lines of a 4-million-line log holds a few chunks, never the file.

Lines are counted as grep and editors count them: split on ``\\n`` only, a ``\\r`` before it
dropped, no phantom last line after a final newline. Bytes that are not UTF-8 (the first 8 KiB
were checked before: a file that starts binary is not read as text) are shown as U+FFFD, and a
note says so.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable
from dataclasses import dataclass, field

from dcode.agent.tools.errors import fail
from dcode.agent.tools.spec import READ_FILE

NAME = READ_FILE.name
MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 80_000
_KEEP_BYTES = 4 * MAX_LINE_CHARS + 4
"""Bytes of one line kept: enough for ``MAX_LINE_CHARS`` + 1 characters of any UTF-8 text."""
_CONTINUATION = bytes(range(0x80, 0xC0))
REPLACED_NOTE = "[Some bytes in these lines are not valid UTF-8; they are shown as \ufffd.]"


@dataclass(slots=True)
class _Line:
    """One line of the window as it streams in: its first bytes, and how many characters follow."""

    head: bytearray = field(default_factory=bytearray)
    more_chars: int = 0
    last: int = -1

    def add(self, data: bytes) -> None:
        if not data:
            return
        room = _KEEP_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]
        rest = data[max(room, 0) :]
        if rest:
            self.more_chars += _chars(rest)
        self.last = data[-1]

    def text(self) -> tuple[str, bool]:
        """The clipped line, and whether bytes had to be replaced."""
        cut = self.more_chars > 0
        try:
            text, pending = _decode(bytes(self.head), "strict", final=not cut)
            replaced = False
        except UnicodeDecodeError:
            text, pending = _decode(bytes(self.head), "replace", final=not cut)
            replaced = True
        length = len(text) + pending + self.more_chars
        if self.last == 0x0D:  # the \r of a \r\n line end
            length -= 1
            if not cut:
                text = text[:-1]
        if length <= MAX_LINE_CHARS:
            return text, replaced
        return (
            f"{text[:MAX_LINE_CHARS]}… [line truncated, {length - MAX_LINE_CHARS} more chars]",
            replaced,
        )


def _chars(data: bytes) -> int:
    """Characters in UTF-8 ``data``: every byte that does not continue a sequence starts one."""
    return len(data.translate(None, _CONTINUATION))


def _decode(data: bytes, errors: str, *, final: bool) -> tuple[str, int]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    text = decoder.decode(data, final=final)
    return text, 1 if decoder.getstate()[0] else 0


class _Window:
    """Collects the numbered lines ``[offset, offset + limit)`` up to the output cap, and counts
    every line of the file."""

    def __init__(self, offset: int, limit: int) -> None:
        self.offset = offset
        self.limit = limit
        self.newlines = 0
        self.last_byte = b""
        self.rendered: list[str] = []
        self.size = 0
        self.capped = False
        self.replaced = False
        self.line = _Line()

    @property
    def collecting(self) -> bool:
        return not self.capped and len(self.rendered) < self.limit

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.last_byte = chunk[-1:]
        pos = 0
        while pos < len(chunk):
            if not self.collecting:
                self.newlines += chunk.count(b"\n", pos)
                return
            if self.newlines < self.offset:
                pos = self._skip(chunk, pos)
                continue
            end = chunk.find(b"\n", pos)
            self.line.add(chunk[pos : len(chunk) if end < 0 else end])
            if end < 0:
                return
            self._end_line()
            pos = end + 1

    def _skip(self, chunk: bytes, pos: int) -> int:
        """Pass over lines before the window; where in ``chunk`` the window starts, or its end."""
        need = self.offset - self.newlines
        ahead = chunk.count(b"\n", pos)
        if ahead < need:
            self.newlines += ahead
            return len(chunk)
        for _ in range(need):
            pos = chunk.index(b"\n", pos) + 1
        self.newlines += need
        return pos

    def finish(self) -> int:
        """The file's line count, once every chunk was fed."""
        unterminated = self.last_byte not in (b"", b"\n")
        if unterminated and self.collecting and self.newlines >= self.offset:
            self._render()
        return self.newlines + (1 if unterminated else 0)

    def _end_line(self) -> None:
        if self.newlines >= self.offset:
            self._render()
        self.newlines += 1

    def _render(self) -> None:
        text, replaced = self.line.text()
        self.line = _Line()
        entry = f"{self.offset + len(self.rendered) + 1:>6}\t{text}"
        if self.rendered and self.size + len(entry) + 1 > MAX_OUTPUT_CHARS:
            self.capped = True
            return
        self.rendered.append(entry)
        self.size += len(entry) + 1
        self.replaced = self.replaced or replaced


@dataclass(frozen=True, slots=True)
class NumberedText:
    """A window of numbered lines, with the facts of what it shows (lines ``first``-``last``,
    1-based, of ``total``)."""

    text: str
    first: int
    last: int
    total: int


async def numbered_text(
    chunks: AsyncIterable[bytes], shown: str, *, offset: int, limit: int
) -> NumberedText:
    """The numbered window of the file ``chunks`` stream, with the continuation hint."""
    window = _Window(offset, limit)
    async for chunk in chunks:
        window.feed(chunk)
    total = window.finish()
    if offset >= total:
        fail(f"{NAME}: offset {offset} is past the end of {shown}, which has {total} lines")
    rendered = window.rendered
    last = offset + len(rendered)
    if last < total:
        why = f" (output capped at {MAX_OUTPUT_CHARS:,} chars)" if window.capped else ""
        rendered.append(
            f"\n[Showing lines {offset + 1}-{last} of {total}{why}. "
            f"To continue, call read_file with offset={last}.]"
        )
    if window.replaced:
        rendered.append(REPLACED_NOTE)
    return NumberedText("\n".join(rendered), offset + 1, last, total)
