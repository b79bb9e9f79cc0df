"""Regex search over files: ripgrep when installed, a pure-Python scan otherwise.

Both produce the same ``GrepResult``: matches in path order, binary files skipped, each line
clipped so one minified bundle cannot flood the model's context, and a stop at the cap.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypedDict

from dcode.agent.backends.gitignore import PathFilter
from dcode.agent.backends.listing import rg_base_args
from dcode.agent.backends.procs import stream_lines
from dcode.agent.backends.protocol import GrepMatch, GrepResult, InvalidPattern
from dcode.regular_files import open_regular

MAX_LINE_CHARS = 500
# The Python scan reads whole files; bigger ones are almost never source code.
MAX_SCAN_BYTES = 20 * 1024 * 1024

DisplayPath = Callable[[Path], str]


def clip_line(text: str) -> str:
    text = text.rstrip("\r\n")
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… [{len(text) - MAX_LINE_CHARS} more chars]"


def compile_regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidPattern(f"invalid regex {pattern!r}: {exc}") from exc


def python_grep(
    regex: re.Pattern[str],
    files: Iterable[Path],
    *,
    max_matches: int,
    display: DisplayPath,
) -> GrepResult:
    """Scan ``files`` in order (blocking: run it in a thread)."""
    found: list[GrepMatch] = []
    for path in files:
        text = _read_text_file(path)
        if text is None:
            continue
        shown = display(path)
        for number, line in enumerate(text.split("\n"), start=1):
            if regex.search(line) is None:
                continue
            if len(found) >= max_matches:
                return GrepResult(matches=tuple(found), truncated=True)
            found.append(GrepMatch(path=shown, line=number, text=clip_line(line)))
    return GrepResult(matches=tuple(found), truncated=False)


def _read_text_file(path: Path) -> str | None:
    """The file's text, or ``None`` for unreadable, oversized and binary files."""
    try:
        with open_regular(path) as handle:  # a named pipe would block the scan for ever
            if os.fstat(handle.fileno()).st_size > MAX_SCAN_BYTES:
                return None
            data = handle.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


async def rg_grep(
    rg: str,
    pattern: str,
    start: Path,
    *,
    file_glob: str | None,
    max_matches: int,
    display: DisplayPath,
    env: Mapping[str, str] | None = None,
) -> GrepResult:
    """Search with ``rg --json``; matches of a file are kept only once it proved to be text.

    ripgrep may print matches from a file before it meets a NUL byte further on, so each file's
    matches wait for its ``end`` event, which reports ``binary_offset`` for binary files.
    """
    is_file = await asyncio.to_thread(start.is_file)
    cwd, target = (start.parent, start.name) if is_file else (start, ".")
    keep = None if is_file or not file_glob else PathFilter.parse(file_glob)
    argv = [*rg_base_args(rg), "--json", "--sort", "path", "--regexp", pattern]
    argv += _rg_filter_args(file_glob) if keep else []
    argv += ["--", target]
    found: list[GrepMatch] = []
    pending: list[GrepMatch] = []
    async with stream_lines(argv, cwd=cwd, env=env) as (proc, lines):
        async for raw in lines:
            event = _parse_event(raw)
            match event.get("type"):
                case "match":
                    name = _rg_text(event["data"]["path"]).removeprefix("./")
                    wanted = keep is None or keep.keeps(name)
                    if wanted and len(found) + len(pending) <= max_matches:
                        pending.append(_match_from(event["data"], cwd / name, display))
                case "end":
                    if event["data"].get("binary_offset") is None:
                        found.extend(pending)
                    pending = []
                    if len(found) > max_matches:
                        return GrepResult(matches=tuple(found[:max_matches]), truncated=True)
        await proc.wait()
        if proc.returncode == 2 and not found:
            stderr = await proc.stderr.read() if proc.stderr else b""
            message = stderr.decode("utf-8", errors="replace").strip()
            if message:
                raise InvalidPattern(message)
    return GrepResult(matches=tuple(found), truncated=False)


def _rg_filter_args(file_glob: str | None) -> list[str]:
    """Let ripgrep skip files the glob rules out, without letting it search ignored ones.

    A positive ``--glob`` in ripgrep overrides ``.gitignore`` (``-g '*.py'`` would search an
    ignored ``generated.py``), so only exclusions go in as globs, and a name-only pattern
    becomes a file type, which narrows without overriding. Matches are still filtered by
    ``PathFilter`` afterwards, which is what decides; these flags only save work.
    """
    if not file_glob:
        return []
    if file_glob.startswith("!"):
        return ["--glob", file_glob]
    if "/" not in file_glob:
        return ["--type-add", f"dcodeglob:{file_glob}", "--type", "dcodeglob"]
    return []


class _RgText(TypedDict, total=False):
    """A path or a line in ripgrep's ``--json`` output."""

    text: str  # when it is UTF-8
    bytes: str  # base64, for anything else


class _RgData(TypedDict, total=False):
    path: _RgText
    lines: _RgText
    line_number: int
    binary_offset: int | None  # in an ``end`` event: where a binary file was found to be one


class _RgEvent(TypedDict, total=False):
    """One line of ``rg --json`` (the fields dcode reads)."""

    type: str
    data: _RgData


def _parse_event(raw: bytes) -> _RgEvent:
    try:
        event: _RgEvent = json.loads(raw)  # ripgrep writes one JSON object a line
    except ValueError:
        return {}
    return event if isinstance(event, dict) else {}


def _match_from(data: _RgData, path: Path, display: DisplayPath) -> GrepMatch:
    return GrepMatch(
        path=display(path),
        line=int(data["line_number"]),
        text=clip_line(_rg_text(data["lines"])),
    )


def _rg_text(value: _RgText) -> str:
    """ripgrep sends ``text`` for UTF-8 and base64 ``bytes`` for anything else."""
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", errors="replace")
