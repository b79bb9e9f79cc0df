"""Pick a model for ``/model``: recent, configured and preset models, filtered as you type.

Dismisses with the chosen spec, which the app switches to as ``/model SPEC`` would; with
``provider:`` for a provider whose model name is the user's to type (the app puts
``/model provider:`` in the input); or None on Esc. A ``provider:model`` typed in the search box
that no row names can be chosen as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from dcode.models.choices import ModelChoice

CURRENT_MARK = "●"
PROBLEM_MARK = "⚠"


@dataclass(frozen=True, slots=True)
class _Row:
    choice: ModelChoice
    label: Content


class ModelScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    ModelScreen {
        align: center middle;
    }
    ModelScreen > #model-dialog {
        width: 90%;
        max-width: 100;
        height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    #model-title {
        text-style: bold;
        color: $primary;
        padding: 0 0 1 0;
    }
    #model-list {
        height: 1fr;
        border: none;
        background: $surface;
    }
    #model-status {
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

    def __init__(self, choices: list[ModelChoice], *, current: str) -> None:
        super().__init__()
        self.current = current
        self._rows = [_Row(choice, self._label(choice, current)) for choice in choices]
        self._shown: list[_Row] = []
        self._typed = ""

    @staticmethod
    def _label(choice: ModelChoice, current: str) -> Content:
        is_current = choice.spec == current
        mark = (f"{CURRENT_MARK} ", "$text-success") if is_current else ("  ", "")
        name = choice.spec + ("…" if choice.partial else "")
        details = "current" if is_current else choice.origin.value
        if choice.partial:
            details += " · type the model name"
        parts: list[tuple[str, str] | str] = [mark, (name, "bold" if is_current else ""), "  ", (details, "$text-muted")]
        if choice.problem:
            parts.append((f"  {PROBLEM_MARK}", "$text-warning"))  # the status line says what, when highlighted
        return Content.assemble(*parts)

    def compose(self) -> ComposeResult:
        with Vertical(id="model-dialog"):
            yield Label("Switch the model (the conversation continues)", id="model-title")
            yield Input(placeholder="Filter, or type provider:model…", id="model-search")
            yield OptionList(id="model-list")
            yield Label("", id="model-status")

    def on_mount(self) -> None:
        self._apply_filter("")
        specs = [row.choice.spec for row in self._shown]
        if self.current in specs:
            self.query_one("#model-list", OptionList).highlighted = specs.index(self.current)
        self.query_one("#model-search", Input).focus()

    @property
    def shown(self) -> list[ModelChoice]:
        """The models currently listed, in order (for tests and the app)."""
        return [row.choice for row in self._shown]

    def _apply_filter(self, query: str) -> None:
        self._typed = query.strip()
        words = query.lower().split()
        self._shown = [row for row in self._rows if all(word in row.choice.spec.lower() for word in words)]
        options = self.query_one("#model-list", OptionList)
        options.set_options(Option(row.label, id=row.choice.spec) for row in self._shown)
        options.highlighted = 0 if self._shown else None
        self._show_status()

    def _show_status(self) -> None:
        """The counts and keys; what is wrong with the highlighted model, if anything."""
        status = self.query_one("#model-status", Label)
        highlighted = self.query_one("#model-list", OptionList).highlighted
        if self._shown and highlighted is not None and self._shown[highlighted].choice.problem:
            status.update(Content.styled(f"{PROBLEM_MARK} {self._shown[highlighted].choice.problem}", "$text-warning"))
        elif self._shown:
            status.update(f"{len(self._shown)} of {len(self._rows)} · Enter switch · Esc cancel")
        elif ":" in self._typed:
            status.update(f"Enter switches to {self._typed} · Esc cancel")
        else:
            status.update("No match: type provider:model to use another one · Esc cancel")

    @on(OptionList.OptionHighlighted, "#model-list")
    def _highlighted(self) -> None:
        self._show_status()

    @on(Input.Changed, "#model-search")
    def _search(self, event: Input.Changed) -> None:
        self._apply_filter(event.value)

    @on(Input.Submitted, "#model-search")
    def _pick_highlighted(self) -> None:
        options = self.query_one("#model-list", OptionList)
        if options.highlighted is not None and self._shown:
            self.dismiss(self._shown[options.highlighted].choice.spec)
        elif ":" in self._typed and " " not in self._typed:
            self.dismiss(self._typed)

    @on(OptionList.OptionSelected, "#model-list")
    def _pick(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_move(self, step: int) -> None:
        options = self.query_one("#model-list", OptionList)
        if not self._shown:
            return
        current = options.highlighted if options.highlighted is not None else 0
        options.highlighted = max(0, min(len(self._shown) - 1, current + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
