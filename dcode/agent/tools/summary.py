"""One-line descriptions of tool calls and short previews of results, for the UI.

The transcript shows many calls at once, so each gets one scannable line that says what was
touched (``read_file src/app.py:121-320``) rather than a JSON blob. Arguments may be partial or
mistyped while a call streams in, so everything here tolerates junk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dcode.agent.tools import names
from dcode.agent.tools.formatting import count_lines

MAX_SUMMARY_CHARS = 80
PREVIEW_LINE_CHARS = 120
DEFAULT_READ_LIMIT = 2000


def summarize_call(name: str, args: Mapping[str, Any]) -> str:
    return _truncate(_one_line(_describe(name, args)), MAX_SUMMARY_CHARS)


def preview_result(text: str, lines: int = 3) -> str:
    """The first ``lines`` non-blank-edged lines of a result, with a count of the rest."""
    all_lines = text.strip("\n").splitlines()
    while all_lines and not all_lines[0].strip():
        all_lines.pop(0)
    shown = [
        _truncate(line.expandtabs(4).rstrip(), PREVIEW_LINE_CHARS) for line in all_lines[:lines]
    ]
    rest = len(all_lines) - len(shown)
    if rest > 0:
        shown.append(f"… (+{rest} more line{'s' if rest != 1 else ''})")
    return "\n".join(shown)


def _describe(name: str, args: Mapping[str, Any]) -> str:
    match name:
        case names.READ_FILE:
            return f"{name} {_path(args, 'file_path')}{_line_range(args)}"
        case names.WRITE_FILE:
            content = args.get("content")
            count = count_lines(content) if isinstance(content, str) else None
            suffix = "" if count is None else f" ({count} line{'s' if count != 1 else ''})"
            return f"{name} {_path(args, 'file_path')}{suffix}"
        case names.EDIT_FILE:
            suffix = " (replace all)" if args.get("replace_all") is True else ""
            return f"{name} {_path(args, 'file_path')}{suffix}"
        case names.LS:
            return f"{name} {_path(args, 'path')}"
        case names.GLOB:
            return f"{name} {_text(args.get('pattern'))}{_where(args)}"
        case names.GREP:
            glob = _text(args.get("glob"))
            suffix = f" ({glob})" if glob else ""
            return f'{name} "{_text(args.get("pattern"))}"{_where(args)}{suffix}'
        case names.EXECUTE:
            return f"{name} {_text(args.get('command'))}"
        case _:
            pairs = ", ".join(f"{key}={_text(value)}" for key, value in args.items())
            return f"{name} {pairs}".rstrip()


def _line_range(args: Mapping[str, Any]) -> str:
    offset = _int(args.get("offset"), 0)
    limit = _int(args.get("limit"), DEFAULT_READ_LIMIT)
    if offset == 0 and limit == DEFAULT_READ_LIMIT:
        return ""
    return f":{offset + 1}-{offset + limit}"


def _where(args: Mapping[str, Any]) -> str:
    path = _text(args.get("path"))
    return "" if path in ("", ".", "./") else f" in {path}"


def _path(args: Mapping[str, Any], key: str) -> str:
    return _text(args.get(key)) or "."


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return default


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
