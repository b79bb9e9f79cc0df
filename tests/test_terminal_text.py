"""``terminal_text``: what a terminal would obey is removed or shown, never passed on."""

from __future__ import annotations

import json
import os
import pty
import random

import pytest

from dcode.terminal_text import STRING_LIMIT, for_stream, json_safe, safe_prefix, safe_text
from tests.support.hostile_text import (
    APC,
    C1_CSI,
    C1_OSC,
    CLEAR,
    CLIPBOARD,
    DCS,
    LINK,
    RESET,
    TITLE,
    TITLE_BEL,
    UNSAFE,
)
from tests.support.hostile_text import (
    HOSTILE_NUL as HOSTILE,
)


def test_plain_text_comes_back_as_it_is() -> None:
    text = "Plain text, tabs\tand newlines\nand ünïcödé, emoji 👩‍💻, Arabic مرحبا."
    assert safe_text(text) is text
    assert safe_prefix(text) == (text, "")


def test_sequences_are_removed_whole_and_what_they_surround_stays() -> None:
    for sequence in (
        TITLE,
        TITLE_BEL,
        CLEAR,
        CLIPBOARD,
        DCS,
        APC,
        C1_CSI,
        C1_OSC,
        RESET,
        "\x1b(B",
        "\x1b7",
        "\x1b[38;5;196m",
    ):
        assert safe_text(f"a{sequence}b") == "ab", repr(sequence)
    assert safe_text(LINK) == "click here"  # the link's words stay; where it leads goes with it


def test_other_controls_are_shown_not_obeyed() -> None:
    assert safe_text("bell\x07 nul\x00 del\x7f esc\x1b") == "bell␇ nul␀ del␡ esc␛"
    assert safe_text("nel\x85 csi-alone\x9b") == "nel⟨U+0085⟩ csi-alone⟨U+009B⟩"
    assert safe_text("\u202eevil\u202c") == "⟨U+202E⟩evil⟨U+202C⟩"
    assert safe_text("\u2066a\u2069") == "⟨U+2066⟩a⟨U+2069⟩"
    assert safe_text("tab\tnewline\n") == "tab\tnewline\n"


def test_a_carriage_return_cannot_hide_what_it_would_overwrite() -> None:
    assert safe_text("echo hello\rrm -rf ~") == "echo hello\nrm -rf ~"
    assert safe_text("windows\r\nline\r\n") == "windows\nline\n"


def test_a_broken_sequence_loses_its_introducer_and_shows_the_rest() -> None:
    assert safe_text("\x1b]0;never ended") == "0;never ended"
    assert safe_text("\x1b[12\nnext") == "12\nnext"
    payload = "x" * (STRING_LIMIT + 1)
    assert safe_text(f"\x1b]52;c;{payload}\x07") == f"52;c;{payload}␇"


def test_nothing_unsafe_is_left_in_the_hostile_text() -> None:
    shown = safe_text(HOSTILE)
    assert not UNSAFE.search(shown), repr(shown)
    assert "PWNED" not in shown and "cm0gLXJmIH4=" not in shown
    assert "before" in shown and "click here" in shown and "ls\nrm -rf ~\nbell␇" in shown


def _streamed(pieces: list[str]) -> str:
    shown, held = "", ""
    for piece in pieces:
        out, held = safe_prefix(held + piece)
        assert not UNSAFE.search(out), repr(out)
        shown += out
    return shown + safe_text(held)


def test_streamed_in_any_pieces_it_adds_up_to_the_whole() -> None:
    """A sequence split between two deltas is held back until it is whole, never shown in part."""
    whole = safe_text(HOSTILE)
    for cut in range(len(HOSTILE) + 1):
        assert _streamed([HOSTILE[:cut], HOSTILE[cut:]]) == whole, cut
    pick = random.Random(7)
    for _ in range(500):
        cuts = sorted(pick.sample(range(len(HOSTILE) + 1), pick.randint(2, 20)))
        pieces = [
            HOSTILE[start:end] for start, end in zip([0, *cuts], [*cuts, len(HOSTILE)], strict=True)
        ]
        assert _streamed(pieces) == whole
    assert _streamed(list(HOSTILE)) == whole  # one character at a time


def test_what_is_held_back_is_bounded() -> None:
    shown, held = safe_prefix("text \x1b]0;" + "y" * (2 * STRING_LIMIT))
    assert held == "" and shown.startswith("text 0;yyy")
    shown, held = safe_prefix("text \x1b]0;title")
    assert (shown, held) == ("text ", "\x1b]0;title")


def test_a_terminal_gets_safe_text_and_a_pipe_every_byte(tmp_path) -> None:
    controller, device = pty.openpty()
    read_end, write_end = os.pipe()
    with (
        os.fdopen(device, "w", closefd=True) as terminal,
        os.fdopen(write_end, "w") as pipe,
        open(tmp_path / "f", "w") as file,
    ):
        assert for_stream(HOSTILE, terminal) == safe_text(HOSTILE)
        assert for_stream(HOSTILE, pipe) == HOSTILE
        assert for_stream(HOSTILE, file) == HOSTILE
    os.close(controller)
    os.close(read_end)


@pytest.mark.parametrize("value", [HOSTILE, {"nested": [HOSTILE, "\x7f\x9b\u202e"]}])
def test_json_keeps_its_value_and_escapes_every_control(value) -> None:
    encoded = json_safe(json.dumps(value, ensure_ascii=False))
    assert json.loads(encoded) == value
    assert not UNSAFE.search(encoded)
    assert "\\u009b" in encoded and "\\u202e" in encoded
