"""A question with a few answers: a title, a text under it, and the answers as a list.

Enter or a click takes the highlighted answer; a screen adds its own keys for each. The
subclasses say what is asked (``NAME`` prefixes the widgets' ids: ``#NAME-dialog``,
``#NAME-title``, ``#NAME-text``, ``#NAME-choices``) and what an answer does. A screen with the
``-warning`` class is drawn in the warning colour.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from dcode.terminal_text import safe_text

T = TypeVar("T")


class OptionDialog(ModalScreen[T], Generic[T]):
    NAME: ClassVar[str]

    DEFAULT_CSS = """
    OptionDialog {
        align: center middle;
    }
    OptionDialog > .option-dialog {
        width: 90%;
        max-width: 100;
        height: auto;
        max-height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    OptionDialog.-warning > .option-dialog {
        border: round $warning;
    }
    OptionDialog .option-dialog-title {
        text-style: bold;
        color: $primary;
        padding: 0 0 1 0;
    }
    OptionDialog.-warning .option-dialog-title {
        color: $warning;
    }
    OptionDialog .option-dialog-text {
        color: $text-muted;
        padding: 0 0 1 0;
    }
    OptionDialog .option-dialog-list {
        height: auto;
        border: none;
        background: $surface;
    }
    """

    def question(self) -> str | Content:
        raise NotImplementedError

    def explanation(self) -> str | Content:
        raise NotImplementedError

    def answers(self) -> list[Option]:
        """The answers, each with the id ``answered`` receives."""
        raise NotImplementedError

    def answered(self, option_id: str) -> None:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.NAME}-dialog", classes="option-dialog"):
            yield Label(
                _shown(self.question()), id=f"{self.NAME}-title", classes="option-dialog-title"
            )
            yield Static(
                _shown(self.explanation()),
                id=f"{self.NAME}-text",
                classes="option-dialog-text",
                markup=False,
            )
            yield OptionList(
                *self.answers(), id=f"{self.NAME}-choices", classes="option-dialog-list"
            )

    def on_mount(self) -> None:
        choices = self.query_one(".option-dialog-list", OptionList)
        choices.highlighted = 0
        choices.focus()

    @on(OptionList.OptionSelected, ".option-dialog-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.answered(event.option.id or "")


def _shown(text: str | Content) -> Content:
    """A question or its text as drawn: plain words, never markup, and safe (a prompt or a
    path quoted in it may hold anything)."""
    return text if isinstance(text, Content) else Content(safe_text(text))
