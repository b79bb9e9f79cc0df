"""Markdown files that open with a YAML ``---`` block: skills and agent definitions.

One reader for both, so that the two kinds of file fail the same way and say so in the same
words: too large, unreadable, no frontmatter, bad YAML, not a mapping, a required text field
missing. The caller adds the path and decides what a failure costs (skipping the file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dcode.regular_files import open_regular

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class FrontmatterError(ValueError):
    """Why a file cannot be read as frontmatter and body; the message names no path."""


@dataclass(frozen=True, slots=True)
class Document:
    meta: dict[str, object]
    body: str


def _size(limit: int) -> str:
    mib, kib = 1024 * 1024, 1024
    return f"{limit // mib} MiB" if limit % mib == 0 else f"{limit // kib} KiB"


def read_document(
    path: Path, max_bytes: int, required: tuple[str, ...] = ("name", "description")
) -> Document:
    """The frontmatter and body of ``path``; raises FrontmatterError when the file is larger
    than ``max_bytes``, unreadable, has no mapping in a ``---`` block, or lacks a non-empty
    text value for a ``required`` field."""
    import yaml

    loader = getattr(
        yaml, "CSafeLoader", yaml.SafeLoader
    )  # libyaml's is some 20 times faster: a start reads every skill
    try:
        if path.stat().st_size > max_bytes:
            raise FrontmatterError(f"skipped, larger than {_size(max_bytes)}")
        # Never a pipe or a device; at most the cap all the same, as a size may lie (/proc).
        with open_regular(path) as file:
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise FrontmatterError(f"could not be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise FrontmatterError(f"skipped, larger than {_size(max_bytes)}")
    text = data.decode("utf-8", errors="replace")
    match = _FRONTMATTER.match(text)
    if match is None:
        fields = " and ".join(required) or "settings"
        raise FrontmatterError(f"no frontmatter (a '---' block with {fields})")
    try:
        meta = yaml.load(match.group(1), Loader=loader)  # a safe loader, libyaml's when built
    except yaml.YAMLError as exc:
        raise FrontmatterError(
            f"the frontmatter is not valid YAML ({cut(str(exc), 200)})"
        ) from None
    if not isinstance(meta, dict):
        raise FrontmatterError("the frontmatter is not a mapping")
    missing = [
        field
        for field in required
        if not isinstance(meta.get(field), str) or not meta[field].strip()
    ]
    if missing:
        raise FrontmatterError(f"missing {' and '.join(missing)}")
    return Document(meta=meta, body=text[match.end() :])


def cut(text: str, limit: int) -> str:
    """``text`` on one line, whitespace collapsed, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
