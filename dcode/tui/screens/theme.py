"""Choose a theme with a live preview.

Textual's own ``App.search_themes()`` applies a theme but reports nothing back, so the app could
not persist the choice. ``ThemeScreen`` previews each highlighted theme, restores the original on
Esc, and dismisses with the chosen name so the caller can save it (``Settings.theme``).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option


class ThemeScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    ThemeScreen {
        align: right middle;
    }
    ThemeScreen > #theme-dialog {
        width: 40;
        height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    #theme-title {
        text-style: bold;
        color: $primary;
    }
    #theme-list {
        height: 1fr;
        border: none;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self) -> None:
        super().__init__()
        self._original: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="theme-dialog"):
            yield Label("Theme  (Enter keep · Esc undo)", id="theme-title")
            yield OptionList(id="theme-list")

    def on_mount(self) -> None:
        self._original = self.app.theme
        names = sorted(self.app.available_themes)
        options = self.query_one("#theme-list", OptionList)
        options.set_options(Option(name, id=name) for name in names)
        if self._original in names:
            options.highlighted = names.index(self._original)
        options.focus()

    @on(OptionList.OptionHighlighted, "#theme-list")
    def _preview(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id:
            self.app.theme = event.option.id

    @on(OptionList.OptionSelected, "#theme-list")
    def _choose(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        if self._original is not None:
            self.app.theme = self._original
        self.dismiss(None)


def pick_theme(app: App[object]) -> None:
    """The thin alternative: Textual's built-in theme palette (no result is reported)."""
    app.search_themes()
