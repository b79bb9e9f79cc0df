"""Whether the terminal can show pictures, asked once before the app starts.

The questions are textual-image's: a Device Attributes query (``ESC [ c``) whose answer lists
attribute 4 when the terminal speaks Sixel, and a Kitty graphics protocol query (an ``a=q``
transmission the terminal answers ``OK`` to). As textual-image does, Sixel wins over Kitty's
protocol (some terminals claim the protocol but not its placeholders; Kitty itself has no
Sixel). The two questions go out together with the Device Attributes query last: every
terminal answers that one, so the answer arrives in one round trip instead of a timeout.

textual-image asks the same questions when it is imported, which only works before Textual
reads stdin; dcode asks them itself before the first frame and imports textual-image after it,
with its own questions kept from running (:func:`image_widget`). No question is asked when
stdin or stdout is not a terminal (tests), under tmux or screen (which pass neither protocol
on without configuration), or when ``DCODE_GRAPHICS`` says what to use (``kitty``, ``sixel``,
``none``). Everything else gets the timeline.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.widget import Widget

ENV = "DCODE_GRAPHICS"
TIMEOUT_S = 0.2
_KITTY_QUERY = "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\"
_CELL_QUERY = "\x1b[16t"
_DA1_QUERY = "\x1b[c"
_DA1 = re.compile(r"\x1b\[\?([\d;]*)c")
_KITTY_OK = re.compile(r"\x1b_Gi=31;OK\x1b\\")
_CELL = re.compile(r"\x1b\[6;(\d+);(\d+)t")


class Graphics(StrEnum):
    NONE = "none"
    KITTY = "kitty"
    SIXEL = "sixel"

    @property
    def shows_pictures(self) -> bool:
        return self is not Graphics.NONE


# Pixels per cell, as asked of the terminal with the protocol (textual-image sizes pictures by it).
_cell_size: tuple[int, int] = (10, 20)


def read_answers(answer: str) -> tuple[Graphics, tuple[int, int] | None]:
    """What the terminal's answers say: the protocol to use and its cell size, if it said."""
    cell = _CELL.search(answer)
    size = (int(cell.group(2)), int(cell.group(1))) if cell else None
    attributes = _DA1.search(answer)
    if attributes and "4" in attributes.group(1).split(";"):
        return Graphics.SIXEL, size
    if _KITTY_OK.search(answer):
        return Graphics.KITTY, size
    return Graphics.NONE, size


def asks_terminal(env: Mapping[str, str], stdin_tty: bool, stdout_tty: bool) -> bool:
    """Whether the terminal is worth asking at all."""
    term = env.get("TERM", "")
    if not (stdin_tty and stdout_tty) or term in {"", "dumb"}:
        return False
    return not (env.get("TMUX") or env.get("STY") or term.startswith(("screen", "tmux")))


def detect(env: Mapping[str, str] | None = None) -> Graphics:
    """The protocol for pictures in this terminal; call it before the app starts."""
    global _cell_size
    env = os.environ if env is None else env
    chosen = env.get(ENV, "").strip().lower()
    if chosen in {g.value for g in Graphics}:
        return Graphics(chosen)
    if chosen in {"off", "0", "no"}:
        return Graphics.NONE
    stdin, stdout = sys.__stdin__, sys.__stdout__
    if stdin is None or stdout is None:
        return Graphics.NONE
    try:
        if not asks_terminal(env, os.isatty(stdin.fileno()), os.isatty(stdout.fileno())):
            return Graphics.NONE
        graphics, size = read_answers(_ask(stdin.fileno(), stdout.fileno()))
    except (OSError, ValueError):
        return Graphics.NONE
    if size is not None and all(size):
        _cell_size = size
    elif (pixels := _window_pixels(stdout.fileno())) is not None:
        _cell_size = pixels
    return graphics


def _ask(stdin: int, stdout: int) -> str:
    """Send the questions in cbreak mode and read until the Device Attributes answer."""
    import select
    import termios
    import tty

    saved = termios.tcgetattr(stdin)
    answer = ""
    try:
        tty.setcbreak(stdin, termios.TCSANOW)
        os.write(stdout, (_KITTY_QUERY + _CELL_QUERY + _DA1_QUERY).encode())
        while not _DA1.search(answer):
            readable, _, _ = select.select([stdin], [], [], TIMEOUT_S)
            if not readable:
                break
            chunk = os.read(stdin, 1024)
            if not chunk:
                break
            answer += chunk.decode("utf-8", "replace")
    finally:
        termios.tcsetattr(stdin, termios.TCSANOW, saved)
    return answer


def _window_pixels(fd: int) -> tuple[int, int] | None:
    """Pixels per cell from the window size the kernel knows, when the terminal set it."""
    import fcntl
    import struct
    import termios

    try:
        rows, columns, width, height = struct.unpack(
            "HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
        )
    except OSError:
        return None
    if not (rows and columns and width and height):
        return None
    return width // columns, height // rows


def image_widget(graphics: Graphics) -> type[Widget]:
    """textual-image's widget class for ``graphics``, imported now (in a worker thread).

    Importing textual-image asks the terminal its own questions, which would race Textual
    for stdin: while it loads, it is shown no terminal (``sys.__stdout__`` is None), and its
    cell size is the one asked above.
    """
    from dcode.tui.textual_internals import prime_textual_image

    with _NoTerminal():
        import textual_image.renderable  # noqa: F401 - its import-time questions see no terminal
    prime_textual_image(_cell_size)
    from textual_image.widget import SixelImage, TGPImage

    return SixelImage if graphics is Graphics.SIXEL else TGPImage


class _NoTerminal:
    def __enter__(self) -> None:
        self._saved = sys.__stdout__
        sys.__stdout__ = None  # type: ignore[misc]  # Final in the stubs; hidden on purpose

    def __exit__(self, *exc: object) -> None:
        sys.__stdout__ = self._saved  # type: ignore[misc]  # put back
