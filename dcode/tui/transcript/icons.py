"""The marks a call's line starts with: a spinner while it runs, then its status."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dcode.agent.events import ToolStatus

if TYPE_CHECKING:
    from textual.timer import Timer
    from textual.widget import Widget

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

STATUS_ICONS: dict[ToolStatus, tuple[str, str]] = {
    ToolStatus.OK: ("✓", "$text-success"),
    ToolStatus.ERROR: ("✗", "$text-error"),
    ToolStatus.DENIED: ("⊘", "$text-warning"),
    ToolStatus.CANCELLED: ("◌", "$text-muted"),
}


class Spinner:
    """A running line's turning mark: its frame, and the timer on the widget that shows it,
    which redraws the line while it runs. ``turn=False`` (no animation) keeps the redraws (a
    line that shows a running time) but not the turning."""

    def __init__(
        self,
        widget: Widget,
        redraw: Callable[[], None],
        *,
        interval: float = 0.1,
        turn: bool = True,
    ) -> None:
        self._widget = widget
        self._redraw = redraw
        self._interval = interval
        self._turn = turn
        self._timer: Timer | None = None
        self.frame = 0

    @property
    def mark(self) -> str:
        return SPINNER[self.frame % len(SPINNER)]

    def keep(self, running: bool) -> None:
        """Redraw on the timer while ``running``; stop when not."""
        if running and self._timer is None:
            self._timer = self._widget.set_interval(self._interval, self._tick)
        elif not running:
            self.stop()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _tick(self) -> None:
        if self._turn:
            self.frame += 1
        self._redraw()
