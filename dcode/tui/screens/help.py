"""Slash commands and key bindings at a glance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from dcode.terminal_text import safe_text


class HelpTable(Grid):
    """Two columns, names and what they do; a long description wraps under itself."""

    DEFAULT_CSS = """
    HelpTable {
        grid-size: 2;
        grid-columns: auto 1fr;
        grid-rows: auto;
        grid-gutter: 0 3;
        height: auto;
    }
    HelpTable > .help-name {
        color: $accent;
        width: auto;
    }
    """

    def __init__(
        self, rows: list[tuple[str, str]], *, prefix: str = "", id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.rows = [(prefix + name, description) for name, description in rows]

    def compose(self) -> ComposeResult:
        if not self.rows:
            yield Static("(none)", classes="help-name")
        for name, description in self.rows:  # a project's commands and agents name themselves
            yield Static(safe_text(name), classes="help-name", markup=False)
            yield Static(safe_text(description), classes="help-description", markup=False)

    @property
    def text(self) -> str:
        return "\n".join(f"{name}  {description}" for name, description in self.rows)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > #help-dialog {
        width: 90%;
        max-width: 100;
        height: auto;
        max-height: 85%;
        border: round $primary;
        background: $surface;
        padding: 0 2;
    }
    HelpScreen .help-heading {
        text-style: bold;
        color: $primary;
        margin: 1 0 0 0;
    }
    HelpScreen #help-hint {
        color: $text-muted;
        margin: 1 0 0 0;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
    ]

    def __init__(
        self,
        commands: list[tuple[str, str]],
        keys: list[tuple[str, str]],
        custom: Sequence[tuple[str, str]] = (),
        left_out: Sequence[tuple[str, str]] = (),
    ) -> None:
        """``custom``: the user's own commands; ``left_out``: (file, why) for the command files
        that were not read."""
        super().__init__()
        self.commands = list(commands)
        self.keys = list(keys)
        self.custom = list(custom)
        self.left_out = list(left_out)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Label("Commands", classes="help-heading")
            yield HelpTable(self.commands, prefix="/", id="help-commands")
            if self.custom or self.left_out:
                yield Label(
                    "Your commands (.dcode/commands, .claude/commands, $DCODE_HOME/commands)",
                    classes="help-heading",
                )
                yield HelpTable(self.custom, prefix="/", id="help-custom")
            if self.left_out:
                lines = "\n".join(f"left out: {path}: {why}" for path, why in self.left_out)
                yield Static(
                    safe_text(lines), id="help-left-out", classes="help-description", markup=False
                )
            yield Label("Keys", classes="help-heading")
            yield HelpTable(self.keys, id="help-keys")
            yield Label("Esc or q to close", id="help-hint")

    def action_close(self) -> None:
        self.dismiss(None)
