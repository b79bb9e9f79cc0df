"""Glob patterns translated to regular expressions over ``/``-separated relative paths.

``fnmatch`` lets ``*`` cross directory boundaries and knows nothing of ``**`` or braces, and
``PurePath.full_match`` only exists from Python 3.13, so the glob tool, the grep file filter and
the ``.gitignore`` matcher share this small translator instead.

Semantics: ``*`` and ``?`` never match ``/``; a ``**`` segment matches any number of directories
(``a/**`` matches everything below ``a``); ``[...]`` is a character class (``!`` or ``^`` negates);
``\\`` escapes the next character; ``{a,b}`` alternatives are expanded when asked for. Dotfiles are
not special, matching ripgrep and git.
"""

from __future__ import annotations

import re

MAX_BRACE_EXPANSIONS = 256


def compile_glob(pattern: str, *, braces: bool = True) -> re.Pattern[str]:
    """A regex matching a whole relative path against ``pattern``."""
    return re.compile(f"^(?:{translate(pattern, braces=braces)})$", re.DOTALL)


def translate(pattern: str, *, braces: bool = True) -> str:
    """The regex body (no anchors) for ``pattern``."""
    alternatives = expand_braces(pattern) if braces else [pattern]
    return "|".join(f"(?:{_translate_path(alt)})" for alt in alternatives)


def has_magic(text: str) -> bool:
    return any(ch in text for ch in "*?[{")


def expand_braces(pattern: str) -> list[str]:
    """``a.{py,pyi}`` → ``[a.py, a.pyi]``; braces nest, and a brace without a comma is literal."""
    results: list[str] = []
    pending = [pattern]
    while pending:
        current = pending.pop()
        span = _first_brace_group(current)
        if span is None:
            results.append(current)
            continue
        start, end, options = span
        if len(results) + len(pending) + len(options) > MAX_BRACE_EXPANSIONS:
            results.append(current)
            continue
        pending.extend(current[:start] + opt + current[end + 1 :] for opt in reversed(options))
    return results


def _first_brace_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """Position of the first ``{...}`` holding a top-level comma, and its options."""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            group = _brace_group_at(pattern, i)
            if group is not None:
                return group
        i += 1
    return None


def _brace_group_at(pattern: str, start: int) -> tuple[int, int, list[str]] | None:
    depth = 0
    options: list[str] = []
    piece_start = start + 1
    i = start
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if not options:
                    return None
                options.append(pattern[piece_start:i])
                return start, i, options
        elif ch == "," and depth == 1:
            options.append(pattern[piece_start:i])
            piece_start = i + 1
        i += 1
    return None


def _translate_path(pattern: str) -> str:
    segments = pattern.split("/")
    parts: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":
            parts.append(".+" if index == last else "(?:[^/]+/)*")
            continue
        parts.append(_translate_segment(segment) + ("" if index == last else "/"))
    return "".join(parts)


def _translate_segment(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        match ch:
            case "\\" if i + 1 < len(segment):
                out.append(re.escape(segment[i + 1]))
                i += 2
                continue
            case "*":
                while i + 1 < len(segment) and segment[i + 1] == "*":
                    i += 1
                out.append("[^/]*")
            case "?":
                out.append("[^/]")
            case "[":
                cls, consumed = _translate_class(segment, i)
                out.append(cls)
                i += consumed
                continue
            case _:
                out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _translate_class(segment: str, start: int) -> tuple[str, int]:
    """Translate ``[...]`` at ``start``; an unclosed bracket is a literal ``[``."""
    i = start + 1
    negate = i < len(segment) and segment[i] in "!^"
    if negate:
        i += 1
    body_start = i
    if i < len(segment) and segment[i] == "]":
        i += 1
    while i < len(segment) and segment[i] != "]":
        i += 2 if segment[i] == "\\" else 1
    if i >= len(segment):
        return re.escape("["), 1
    body = segment[body_start:i]
    escaped = "".join(_class_char(c) for c in _unescape_class(body))
    prefix = "^/" if negate else ""
    # A class never matches the separator, negated or not.
    regex = f"[{prefix}{escaped}]" if negate else f"(?![/])[{escaped}]"
    return regex, i - start + 1


def _unescape_class(body: str) -> list[str]:
    chars: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            chars.append("\\" + body[i + 1])
            i += 2
            continue
        chars.append(body[i])
        i += 1
    return chars


def _class_char(token: str) -> str:
    if token.startswith("\\"):
        return re.escape(token[1])
    if token in "\\]^[":
        return "\\" + token
    return token  # '-' keeps its range meaning
