"""Full garbage collections at moments nobody is watching the screen.

CPython's automatic full (generation 2) collection walks every tracked object. With a
transcript of a few hundred widgets, their caches and a session's messages, one walk takes
50–150 ms, and it starts whenever allocation counts say so: in the middle of a streamed
answer, as a frozen frame. While something streams, dcode therefore defers full collections
(young generations still run) and does them itself at quiet moments: when a tool starts
running, when a turn has ended, or when too long has passed.

Start-up has the same problem. What imports build (modules, classes, functions) lives as long
as the process, yet every full collection walks it again: one took 30 ms of the first frame,
and two more took 60-100 ms each while the engine's imports ran in their thread. So the launch
freezes what the UI's imports built (``gc.freeze``) before the app runs, and the engine's
imports run with full collections deferred and are frozen in turn once they are done.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

DEFERRED_THRESHOLD = 1_000_000  # generation-2 threshold while streaming: effectively never
MAX_DEFERRAL = 30.0  # seconds; a very long turn still gets a full collection this often
QUIET_DELAY = 1.0  # after a turn ends, wait this long before collecting


class QuietCollector:
    """Defers automatic full collections while streaming; collects at the quiet moments."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._saved: tuple[int, int, int] | None = None
        self._last_full = clock()

    @property
    def deferring(self) -> bool:
        return self._saved is not None

    def streaming(self) -> None:
        """Something is streaming to the screen: no automatic full collections now."""
        self._defer()
        if self._clock() - self._last_full > MAX_DEFERRAL:
            self.collect()

    def loading(self) -> None:
        """Modules are being imported: no automatic full collections until ``loaded``."""
        self._defer()

    def loaded(self) -> None:
        """Imports done: what is alive now is taken out of every later walk, and CPython's
        thresholds come back."""
        gc.freeze()
        saved, self._saved = self._saved, None
        if saved is not None:
            gc.set_threshold(*saved)

    def quiet(self) -> None:
        """A pause in what the screen shows (a tool runs): collect if it has been a while."""
        if self._saved is not None and self._clock() - self._last_full > QUIET_DELAY:
            self.collect()

    def idle(self) -> None:
        """Nothing streams any more: collect now and give CPython its thresholds back."""
        saved, self._saved = self._saved, None
        if saved is not None:
            gc.set_threshold(*saved)
            self.collect()

    def _defer(self) -> None:
        if self._saved is None:
            self._saved = gc.get_threshold()
            young, middle, _ = self._saved
            gc.set_threshold(young, middle, DEFERRED_THRESHOLD)

    def collect(self) -> None:
        gc.collect()
        self._last_full = self._clock()
