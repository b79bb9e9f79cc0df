"""Small text helpers the tools share when wording their results."""

from __future__ import annotations

from collections.abc import Sequence


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def count_lines(content: str) -> int:
    """Lines as an editor shows them: a final newline does not start another line."""
    if not content:
        return 0
    return content.count("\n") + (0 if content.endswith("\n") else 1)


def join_capped(lines: Sequence[str], max_chars: int) -> tuple[str, int]:
    """Join whole lines up to ``max_chars``; also return how many lines were left out."""
    kept: list[str] = []
    size = 0
    for line in lines:
        if kept and size + len(line) + 1 > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept), len(lines) - len(kept)
