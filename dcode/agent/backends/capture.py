"""Bounded capture of a command's output: the head and the tail, with the middle counted.

A build log's first lines say what ran and its last lines say how it failed, so both ends are
worth keeping; the middle is dropped as it streams in, so a command printing gigabytes costs
no more memory than one printing the cap.

``OutputTail`` keeps what a screen shows of a command while it runs: its last few lines, as a
terminal would leave them (a carriage return starts its line over, so a progress bar is one
line, not a thousand), each cut to a width.
"""

from __future__ import annotations

from collections import deque


class HeadTailBuffer:
    """Keeps the first and last ``limit // 2`` characters of everything ``add``-ed."""

    def __init__(self, limit: int) -> None:
        self._half = max(1, limit // 2)
        self._limit = 2 * self._half
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0

    def add(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        if self._head_len < self._half:
            take = text[: self._half - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            text = text[len(take) :]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail and self._tail_len - len(self._tail[0]) >= self._half:
            self._tail_len -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self._limit

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self.truncated:
            return head + tail
        tail = tail[-self._half :]
        dropped = self.total - len(head) - len(tail)
        return f"{head}\n\n... [{dropped} chars truncated] ...\n\n{tail}"


TAIL_LINES = 5
"""The lines of a running command a screen shows (its newest)."""
TAIL_LINE_CHARS = 240
"""Of each, the first characters kept: a line longer than a screen is cut there anyway."""


class OutputTail:
    """The last ``lines`` lines of everything ``add``-ed, each cut to ``line_chars``, and how
    many lines there have been. Memory stays bounded whatever the output."""

    def __init__(self, lines: int = TAIL_LINES, line_chars: int = TAIL_LINE_CHARS) -> None:
        self._done: deque[str] = deque(maxlen=lines)
        self._lines = lines
        self._line_chars = line_chars
        self._current = ""
        self.finished_lines = 0

    def add(self, text: str) -> None:
        newlines = text.count("\n")
        if not newlines:
            self._extend(text)
            return
        # Only the last lines can still show: the others are counted, never split out.
        *ends, rest = text.rsplit("\n", self._lines)
        if newlines > self._lines:  # the line being written scrolls away with the earliest
            ends[0] = ends[0].rpartition("\n")[2]
            self._current = ""
        for part in ends:
            self._extend(part)
            self._done.append(self._shown(self._current))
            self._current = ""
        self.finished_lines += newlines
        self._extend(rest)

    def _extend(self, part: str) -> None:
        """Add to the line being written: a carriage return starts it over, except the one
        that ends it (``\\r\\n``), whose newline may not have arrived yet."""
        current = self._current + part
        restart = current.rstrip("\r").rfind("\r")
        if restart >= 0:
            current = current[restart + 1 :]
        if len(current) > self._line_chars + 1:
            current = current[: self._line_chars] + ("\r" if current.endswith("\r") else "")
        self._current = current

    def _shown(self, line: str) -> str:
        return line.rstrip("\r")[: self._line_chars]

    @property
    def lines(self) -> int:
        """Lines so far, the one being written included."""
        return self.finished_lines + (1 if self._shown(self._current) else 0)

    def text(self) -> str:
        """The last lines, oldest first, joined by newlines; "" before any output."""
        rows = list(self._done)
        if current := self._shown(self._current):
            rows.append(current)
        return "\n".join(rows[-self._lines :])
