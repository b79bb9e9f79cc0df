"""Bounded capture of a command's output: the head and the tail, with the middle counted.

A build log's first lines say what ran and its last lines say how it failed, so both ends are
worth keeping; the middle is dropped as it streams in, so a command printing gigabytes costs
no more memory than one printing the cap.
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
