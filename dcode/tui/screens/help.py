"""Slash commands and key bindings at a glance."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static


def _table(rows: list[tuple[str, str]], *, prefix: str = "") -> Content:
    width = max((len(prefix + name) for name, _ in rows), default=0) + 3
    lines = [
        Content.assemble(((prefix + name).ljust(width), "$accent"), (description, "$foreground"))
        for name, description in rows
    ]
    return Content("\n").join(lines) if lines else Content.styled("(none)", "$text-muted")


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

    def __init__(self, commands: list[tuple[str, str]], keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.commands = list(commands)
        self.keys = list(keys)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Label("Commands", classes="help-heading")
            yield Static(_table(self.commands, prefix="/"), id="help-commands")
            yield Label("Keys", classes="help-heading")
            yield Static(_table(self.keys), id="help-keys")
            yield Label("Esc or q to close", id="help-hint")

    def action_close(self) -> None:
        self.dismiss(None)
