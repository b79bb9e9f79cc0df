"""``PlainLines``: a container's repeated line is exactly what Textual would have drawn."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.widget import Widget

from dcode.tui.transcript.plain_lines import PlainLines


class Plain(Vertical, PlainLines):
    DEFAULT_CSS = """
    Plain { height: 8; padding: 1 3 0 2; background: $panel; background-tint: $foreground 5%; }
    Plain.boxed { border: round $accent; border-title-align: center; }
    """


class Holder(App[None]):
    def compose(self) -> ComposeResult:
        yield Plain(id="plain")
        yield Plain(classes="boxed", id="boxed")


def ordinary(widget: Widget, crop: Region) -> list:
    return Widget.render_lines(widget, crop)


def cells(strips: list) -> list[list[tuple[str, object]]]:
    """What a terminal shows: each cell's character and style (segments may split differently)."""
    return [
        [(char, segment.style) for segment in strip for char in segment.text] for strip in strips
    ]


async def test_the_repeated_line_is_the_ordinary_rendering() -> None:
    app = Holder()
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause()
            plain = app.query_one("#plain", Plain)
            crop = Region(0, 0, plain.size.width, plain.size.height)
            plain._styles_cache.clear()
            expected = ordinary(plain, crop)
            plain._styles_cache.clear()
            assert cells(plain.render_lines(crop)) == cells(expected)
            assert (
                len({strip.text for strip in expected}) == 1
            )  # a plain container's lines are alike


async def test_a_bordered_container_is_drawn_the_ordinary_way() -> None:
    app = Holder()
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        boxed = app.query_one("#boxed", Plain)
        boxed.border_title = "title"
        await pilot.pause()
        crop = Region(0, 0, boxed.size.width, boxed.size.height)
        lines = boxed.render_lines(crop)
        assert lines[0].text != lines[1].text  # the top border and title, then the sides
        boxed._styles_cache.clear()
        assert cells(lines) == cells(ordinary(boxed, crop))
