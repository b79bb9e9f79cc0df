"""A list under a search box, filtered as you type: what the model and session pickers share.

Every word typed must appear in a row's text, in any order. Up, Down, Page Up and Page Down move
through the list while the search box keeps the focus, so typing and moving mix freely. Enter
(or a click) dismisses with the highlighted row's key, Esc with None. A picker builds its rows
and says what the status line under the list shows; it may also let Enter pick something the
user typed that no row names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PickerRow(Generic[T]):
    item: T
    key: str
    """What the picker dismisses with when this row is chosen."""
    haystack: str
    """The row's searchable text, in lower case."""
    label: Content


class FilterPicker(ModalScreen[str | None], Generic[T]):
    NAME: ClassVar[str]
    """The widgets' id prefix: ``#NAME-dialog``, ``#NAME-title``, ``#NAME-search``, ``#NAME-list``, ``#NAME-status``."""
    HEADING: ClassVar[str]
    PLACEHOLDER: ClassVar[str]

    DEFAULT_CSS = """
    FilterPicker {
        align: center middle;
    }
    FilterPicker > .picker-dialog {
        width: 90%;
        height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    FilterPicker .picker-title {
        text-style: bold;
        color: $primary;
        padding: 0 0 1 0;
    }
    FilterPicker OptionList.picker-list {
        height: 1fr;
        border: none;
        background: $surface;
    }
    FilterPicker .picker-status {
        color: $text-muted;
        height: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("down", "move(1)", "Down", show=False),
        Binding("up", "move(-1)", "Up", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
    ]

    def __init__(self, rows: list[PickerRow[T]]) -> None:
        super().__init__()
        self.rows = rows
        self._shown: list[PickerRow[T]] = []
        self.query_text = ""
        """What is typed in the search box, stripped."""

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.NAME}-dialog", classes="picker-dialog"):
            yield Label(self.HEADING, id=f"{self.NAME}-title", classes="picker-title")
            yield Input(
                placeholder=self.PLACEHOLDER, id=f"{self.NAME}-search", classes="picker-search"
            )
            yield OptionList(id=f"{self.NAME}-list", classes="picker-list")
            yield Label("", id=f"{self.NAME}-status", classes="picker-status")

    def on_mount(self) -> None:
        self._apply_filter("")
        first = self.first_highlight()
        if first is not None:
            self._options.highlighted = first
        self.query_one(".picker-search", Input).focus()

    @property
    def shown(self) -> list[T]:
        """The items currently listed, in order (for tests and the app)."""
        return [row.item for row in self._shown]

    @property
    def highlighted_row(self) -> PickerRow[T] | None:
        highlighted = self._options.highlighted
        return self._shown[highlighted] if self._shown and highlighted is not None else None

    # --- what a picker says

    def first_highlight(self) -> int | None:
        """The row highlighted when the picker opens, if not the first."""
        return None

    def status_line(self) -> str | Content:
        """The line under the list, shown again whenever the list or its highlight changes."""
        raise NotImplementedError

    def typed_choice(self) -> str | None:
        """What Enter picks when no row is highlighted: nothing, unless the picker says otherwise."""
        return None

    # --- the mechanics

    @property
    def _options(self) -> OptionList:
        return self.query_one(".picker-list", OptionList)

    def _apply_filter(self, query: str) -> None:
        self.query_text = query.strip()
        words = query.lower().split()
        self._shown = [row for row in self.rows if all(word in row.haystack for word in words)]
        options = self._options
        options.set_options(Option(row.label, id=row.key) for row in self._shown)
        options.highlighted = 0 if self._shown else None
        self._show_status()

    def _show_status(self) -> None:
        self.query_one(".picker-status", Label).update(self.status_line())

    @on(OptionList.OptionHighlighted, ".picker-list")
    def _highlighted(self) -> None:
        self._show_status()

    @on(Input.Changed, ".picker-search")
    def _search(self, event: Input.Changed) -> None:
        self._apply_filter(event.value)

    @on(Input.Submitted, ".picker-search")
    def _pick_highlighted(self) -> None:
        row = self.highlighted_row
        if row is not None:
            self.dismiss(row.key)
        elif (typed := self.typed_choice()) is not None:
            self.dismiss(typed)

    @on(OptionList.OptionSelected, ".picker-list")
    def _pick(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_move(self, step: int) -> None:
        if not self._shown:
            return
        options = self._options
        current = options.highlighted if options.highlighted is not None else 0
        options.highlighted = max(0, min(len(self._shown) - 1, current + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
