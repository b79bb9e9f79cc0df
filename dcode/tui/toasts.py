"""Toasts sit above the prompt and the status bar, never over them.

Textual docks each screen's toast rack at the bottom, one row up: over the status bar and the
prompt, the two places a user reads while a toast is up. The rack's bottom margin follows the
height of what lies under the transcript (the queue, the prompt as it grows, the status bar),
on the main screen and on a dialog over it alike, whenever the main screen is laid out again
or another screen comes up.
"""

# Any: Textual's App and Screen are generic in their result, and toasts go on any of them

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen
    from textual.widget import Widget

RACK = "#textual-toastrack"
"""The id Textual gives each screen's toast rack."""


class ToastPlacement:
    def __init__(self, app: App[Any], main: Screen[Any], above: Widget) -> None:
        """``above``: the widget toasts may cover (the transcript); whatever lies under it on
        ``main`` stays clear."""
        self._app = app
        self._main = main
        self._above = above

    def install(self) -> None:
        self._main.screen_layout_refresh_signal.subscribe(self._app, self.place, immediate=True)
        self._app.screen_change_signal.subscribe(self._app, self.place)

    def place(self, _: object = None) -> None:
        """Lift the active screen's rack clear of the rows under the transcript."""
        if not self._above.is_mounted:
            return
        gap = max(0, self._main.size.height - self._above.region.bottom)
        for rack in self._app.screen.query(RACK):
            if rack.styles.margin.bottom != gap:
                rack.styles.margin = (0, 0, gap, 0)
