"""Text that dcode did not write, made safe to draw on a terminal.

An answer, a tool's output, a file, an MCP server's reply, a session title or a server's error
message can hold bytes a terminal obeys rather than shows: ``ESC ] 0 ; … BEL`` retitles the
window, ``ESC [ 2 J`` clears the screen, ``ESC ] 52`` writes the clipboard, ``ESC ] 8`` makes a
link whose text lies about its target, a DCS string talks to the terminal itself, and a
carriage return or a bidirectional override makes a line read differently from what it holds.
None of that is the text's to decide, so everything dcode draws of such text goes through
:func:`safe_text` first (the screen, a headless answer written to a terminal, ``sessions
show``); scripts reading a pipe still get every byte.

What it does, one rule for everything:

- A whole escape sequence is removed: CSI (``ESC [`` or 0x9B, parameters, a final byte), the
  string sequences OSC, DCS, SOS, PM and APC (``ESC ]``, ``ESC P``, ``ESC X``, ``ESC ^``,
  ``ESC _`` or their 8-bit forms, up to BEL or ST), and the two- or three-byte ones (``ESC c``,
  ``ESC 7``, ``ESC ( B``). What a terminal would have shown between them stays.
- A carriage return becomes a newline (``\\r\\n`` one newline): both halves of a line that
  one overwrites stay in view.
- Any other control (C0 but tab and newline, DEL, C1) and the bidirectional embeddings,
  overrides and isolates are drawn visibly: a C0 control or DEL as its Unicode control
  picture (``␛``, ``␇``, ``␡``), the others as ``⟨U+202E⟩``. Hidden characters are how text
  lies to a reviewer; shown, they cannot.

A string sequence longer than ``STRING_LIMIT`` characters, or a CSI with more parameters than
a terminal would take, is not a sequence here: its introducer goes and its payload shows.
That bounds what :func:`safe_prefix` holds back while text streams in.

Standard library only, and fast on the common case (one regular-expression scan that finds
nothing): it runs on every streamed delta.
"""

from __future__ import annotations

import re
from typing import IO

STRING_LIMIT = 4096
"""The longest payload of an OSC/DCS/SOS/PM/APC string removed as one sequence."""
_PARAMETERS = 64
_INTERMEDIATES = 16

_BIDI = "\u202a-\u202e\u2066-\u2069"
_UNSAFE_CLASS = f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]"
_UNSAFE = re.compile(_UNSAFE_CLASS)

_CSI_START = r"(?:\x1b\[|\x9b)"
_CSI_BODY = f"[0-?]{{0,{_PARAMETERS}}}[ -/]{{0,{_INTERMEDIATES}}}"
_STRING_START = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])"
_STRING_BODY = f"[^\x07\x1b\x9c]{{0,{STRING_LIMIT}}}"
_ESC_BODY = f"\x1b[ -/]{{0,{_INTERMEDIATES}}}"

_TOKEN = re.compile(
    f"{_CSI_START}{_CSI_BODY}[@-~]"  # CSI, whole
    f"|{_STRING_START}{_STRING_BODY}(?:\x07|\x1b\\\\|\x9c)"  # OSC, DCS, SOS, PM, APC, whole
    f"|{_ESC_BODY}[0-~]"  # ESC c, ESC 7, ESC ( B, ... (and the introducer of a broken sequence)
    "|\r\n?"
    f"|{_UNSAFE_CLASS}"
)
# Where text that may go on stops in the middle of a sequence (or of a "\r\n"): held back.
_UNFINISHED = re.compile(
    f"(?:{_CSI_START}{_CSI_BODY}|{_STRING_START}{_STRING_BODY}\x1b?|{_ESC_BODY}|\r)\\Z"
)
_LONGEST_UNFINISHED = 2 + STRING_LIMIT + 1


def _picture(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"⟨U+{code:04X}⟩"


_VISIBLE = {
    chr(code): _picture(code)
    for code in (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def _replace(match: re.Match[str]) -> str:
    token = match.group()
    if token[0] == "\r":
        return "\n"
    if len(token) > 1:
        return ""  # a whole escape sequence
    return _VISIBLE[token]


def safe_text(text: str) -> str:
    """``text`` with nothing a terminal would obey: sequences removed, other controls visible."""
    if _UNSAFE.search(text) is None:
        return text
    return _TOKEN.sub(_replace, text)


def safe_prefix(text: str) -> tuple[str, str]:
    """For text that is still arriving: the safe form of what is settled, and the raw tail
    held back because it may be the start of a sequence (or a ``\\r`` whose ``\\n`` is next).

    Feed each piece as ``shown, held = safe_prefix(held + piece)`` and end with
    ``safe_text(held)``: the pieces shown add up to exactly ``safe_text`` of the whole.
    """
    if _UNSAFE.search(text) is None:
        return text, ""
    unfinished = _UNFINISHED.search(text, max(0, len(text) - _LONGEST_UNFINISHED))
    if unfinished is None:
        return _TOKEN.sub(_replace, text), ""
    cut = unfinished.start()
    return _TOKEN.sub(_replace, text[:cut]), text[cut:]


def is_safe(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`safe_text` would change."""
    return _UNSAFE.search(text) is None


def for_stream(text: str, stream: IO[str]) -> str:
    """``text`` as it may be written to ``stream``: made safe when the stream is a terminal,
    unchanged otherwise (a pipe or a file gets every byte; scripts rely on them)."""
    return safe_text(text) if _is_terminal(stream) else text


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed, or not a real stream
        return False


_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_BIDI}]")


def json_safe(encoded: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with DEL, the C1 controls and the
    bidirectional controls written as ``\\u`` escapes, as the C0 ones already are: the same
    JSON value, and nothing in it a terminal obeys."""
    if _JSON_UNSAFE.search(encoded) is None:
        return encoded
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", encoded)
