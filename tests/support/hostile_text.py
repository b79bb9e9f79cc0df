"""Text that tries to drive the terminal it is drawn on: the hostile fixture of the tests that
check dcode draws it safely (an answer, a file, an MCP server's result, a session's title).

Every piece is something a terminal acts on: a new window title (with ST and with BEL), a
cleared screen, a clipboard write (OSC 52), a hyperlink whose words hide its target (OSC 8), a
DCS and an APC string, 8-bit C1 sequences, a full reset, a carriage return that would overwrite
``ls`` with ``rm -rf ~``, BEL, NUL, DEL and the bidirectional overrides and isolates.
"""

from __future__ import annotations

import re

TITLE = "\x1b]0;PWNED\x1b\\"
TITLE_BEL = "\x1b]2;PWNED\x07"
CLEAR = "\x1b[2J\x1b[H"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
LINK = "\x1b]8;;http://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
DCS = "\x1bP1$r0m\x1b\\"
APC = "\x1b_Gi=1;AAAA\x1b\\"
C1_CSI = "\x9b2J"
C1_OSC = "\x9d0;PWNED\x9c"
RESET = "\x1bc"
SEQUENCES = f"{TITLE}{TITLE_BEL}{CLEAR}{CLIPBOARD}{LINK} {DCS}{APC}{C1_CSI}{C1_OSC}{RESET}"
CONTROLS = "ls\rrm -rf ~\r\nbell\x07 del\x7f nel\x85 \u202eevil\u202c \u2066isolated\u2069 lone\x1b"
HOSTILE = f"before {SEQUENCES}{CONTROLS}"
"""All of it, NUL included (a file with a NUL is binary to read_file: see ``HOSTILE_FILE``)."""
HOSTILE_NUL = HOSTILE + " nul\x00"
HOSTILE_FILE = f"first line\n{SEQUENCES}\n{CONTROLS}\nlast line\n"
"""Lines for a text file: every hostile piece but NUL."""

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What may never reach a terminal as text: C0 but tab and newline, DEL, C1, the bidi controls."""


def unsafe_in(text: str) -> list[str]:
    """The characters of ``text`` a terminal would obey, with some context each, for a message."""
    return [repr(text[max(0, m.start() - 20) : m.end() + 20]) for m in UNSAFE.finditer(text)]
