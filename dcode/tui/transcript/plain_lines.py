"""Containers that draw nothing of their own but their background.

Textual redraws a widget's every visible line whenever its size changes. While an answer
streams, the transcript, the message and its live segment change size on every write, so each
frame redrew some hundred lines of plain background under the text: more lines than the text
itself. Every line of such a container is alike, so ``PlainLines`` renders one of them the
ordinary way and repeats it: the same cells, at the cost of one line.
"""

from __future__ import annotations

from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


class PlainLines(Widget):
    """Mixin for a container without border, outline or titles: its lines are all alike."""

    def render_lines(self, crop: Region) -> list[Strip]:
        if crop.height <= 1 or not _plain(self):
            return super().render_lines(crop)
        (line,) = super().render_lines(Region(crop.x, crop.y, crop.width, 1))
        return [line] * crop.height


def _plain(widget: Widget) -> bool:
    styles = widget.styles
    return (
        not any(kind for kind, _ in styles.border)
        and not any(kind for kind, _ in styles.outline)
        and widget.border_title is None
        and widget.border_subtitle is None
    )
