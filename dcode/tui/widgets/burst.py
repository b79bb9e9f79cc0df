"""Burst detection for the prompt: keys that arrive too fast to be typed are treated as a paste.

Most terminals bracket a paste, and Textual turns it into one ``Paste`` event. Some (VS Code's
terminal for dropped files, PowerShell hosts, some SSH setups) type it out as separate key
events instead, so a dropped path would never reach the media tracker and an embedded newline
would send half a prompt. :class:`BurstKeys` sits in front of the editor as its ``key_filter``
and runs :class:`~dcode.media.paths.BurstDetector` over the printable keys:

- a printable key is shown at once (typing is never delayed) while nothing else is held, and
  the detector still sees it; once keys turn out to be a burst, the ones already shown are
  taken back and the whole burst is pasted, so nothing appears twice;
- a burst (at least 3 characters, each under 30 ms after the last) is collected until 80 ms of
  quiet and handed to ``PromptArea.handle_paste``, exactly like a bracketed paste: the
  placeholder sources see it, and a newline inside it is a newline, never Enter. One line
  ended by Enter is the exception: text and Enter written at once (tmux ``send-keys "hi"
  Enter``, expect, voice typing, a laggy SSH link) is the line pasted, then Enter pressed;
- Enter, Ctrl+J and Tab join what is held only while something is held (Tab only inside a
  burst); on their own they act at once. Any other key first releases what is held, so the
  order of keys never changes.

Timers are Textual's. Time is injectable: ``key_time`` stamps a key (by default the moment
Textual created the event, so a busy UI does not squeeze typed keys into a fake burst) and
``now`` is the same clock for the timer's poll.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events
from textual.timer import Timer

from dcode.media.paths import BurstDetector, BurstOutput, BurstPaste
from dcode.tui.textual_internals import event_clock

if TYPE_CHECKING:
    from textual.widgets import TextArea

    from dcode.tui.widgets.prompt_input import PromptInput


def _event_time(event: events.Key) -> float:
    return event.time


class BurstKeys:
    """A ``PromptArea.key_filter`` turning unbracketed pastes into pastes.

    ``enabled`` None (the default) means on in a real terminal and off under ``run_test``,
    where the pilot presses keys faster than anyone types; tests of the filter pass True.
    """

    def __init__(
        self,
        prompt: PromptInput,
        *,
        detector: BurstDetector | None = None,
        key_time: Callable[[events.Key], float] = _event_time,
        now: Callable[[], float] = event_clock,
        enabled: bool | None = None,
    ) -> None:
        self.prompt = prompt
        self.detector = detector or BurstDetector()
        self._key_time = key_time
        self._now = now
        self._enabled = enabled
        self._timer: Timer | None = None
        self._held = ""  # every character fed since the last release, in order
        self._echoed = ""  # the prefix of ``_held`` already inserted into the editor
        self.bursts = 0  # pastes recognised, for diagnostics and tests

    @property
    def enabled(self) -> bool:
        if self._enabled is None:
            try:
                self._enabled = not self.prompt.app.is_headless
            except Exception:  # noqa: BLE001 - no app yet: decide on the next key
                return False
        return self._enabled

    @property
    def holding(self) -> bool:
        return self.detector.pending

    # --- the KeyFilter protocol

    def filter_key(self, event: events.Key) -> bool:
        if not self.enabled or self.prompt.area.read_only:
            return False
        char = self._char_of(event)
        if char is None:
            self.flush()
            return False
        echo = char.isprintable() and not self.detector.in_burst and self._echoed == self._held
        if echo:
            self.prompt.area.insert_text(char)
            self._echoed += char
        self._held += char
        released = self.detector.feed(char, self._key_time(event))
        if released is not None:
            self._apply(released)
        self._schedule()
        return True

    def flush(self) -> None:
        self._cancel()
        released = self.detector.flush()
        if released is not None:
            self._apply(released)

    def poll(self) -> None:
        """Release what is due at ``now()``; the timer calls this, tests may too."""
        released = self.detector.poll(self._now())
        if released is not None:
            self._apply(released)
        self._schedule()

    # --- internals

    def _char_of(self, event: events.Key) -> str | None:
        detector = self.detector
        if event.is_printable and event.character:
            return event.character
        if event.key == "enter" and detector.pending:
            return "\r"
        if event.key == "ctrl+j" and detector.pending:
            return "\n"
        if event.key == "tab" and detector.in_burst:
            return "\t"
        return None

    def _schedule(self) -> None:
        self._cancel()
        deadline = self.detector.deadline()
        if deadline is None:
            return
        delay = max(0.001, deadline - self._now())
        self._timer = self.prompt.area.set_timer(delay, self.poll, name="burst-keys")

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _take_release(self, released: BurstOutput) -> tuple[str, str]:
        """Account for ``released`` (a prefix of what was fed); return the keys it stands for,
        as they came, and the part of them already shown."""
        if isinstance(released, BurstPaste):
            # A paste normalises line endings, so measure it against the held text by content.
            count = _held_length(self._held, released.text)
        else:
            count = min(len(released.text), len(self._held))
        keys, shown = self._held[:count], self._echoed[:count]
        self._held = self._held[count:]
        self._echoed = self._echoed[count:]
        return keys, shown

    def _apply(self, released: BurstOutput) -> None:
        area = self.prompt.area
        keys, shown = self._take_release(released)
        if not area.is_attached:
            return
        if isinstance(released, BurstPaste):
            self.bursts += 1
            _take_back(area, shown)
            line = _line_then_enter(keys)
            if line is None:
                area.handle_paste(released.text)
                return
            # One line and Enter in one write (tmux send-keys, expect, voice typing, a laggy
            # link): the line is pasted and the Enter sends it, as typing them would have.
            area.handle_paste(line)
            self.prompt.enter_past_popup()
            return
        # Typed keys, replayed in order: Enter means Enter again (send, accept a completion).
        run: list[str] = []
        for char in released.text[len(shown) :]:
            if char != "\r":
                run.append(char)
                continue
            if run:
                area.insert_text("".join(run))
                run = []
            self._press_enter()
        if run:
            area.insert_text("".join(run))

    def _press_enter(self) -> None:
        """Enter, as if pressed now: send, accept a completion, or a newline after a backslash."""
        if not self.prompt.handle_prompt_key(events.Key("enter", "\r")):
            self.prompt.area.insert_text("\n")


def _line_then_enter(keys: str) -> str | None:
    """The line before the one Enter that ends ``keys``, when that Enter is their only line
    break; None when they end otherwise or span several lines (those stay a paste)."""
    if not keys.endswith("\r"):
        return None
    line = keys[:-1]
    if not line.strip() or "\r" in line or "\n" in line:
        return None
    return line


def _held_length(held: str, pasted: str) -> int:
    """How many held characters a pasted text stands for (``\r\n`` and ``\r`` became ``\n``)."""
    index = consumed = 0
    while index < len(held) and consumed < len(pasted):
        if held.startswith("\r\n", index):
            index += 2
        else:
            index += 1
        consumed += 1
    return index


def _take_back(area: TextArea, shown: str) -> None:
    """Delete ``shown`` from just before the cursor, if it is still there as it was typed."""
    if not shown:
        return
    row, column = area.cursor_location
    if column < len(shown):
        return
    start = (row, column - len(shown))
    if area.get_text_range(start, (row, column)) == shown:
        area.delete(start, (row, column))
