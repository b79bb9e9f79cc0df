"""Asked when the session to open is open in another dcode.

Two processes writing one session would each lose the other's turns, so this one does not
write to it: it can continue in a fork (a new session with a copy of the history as it is now,
the original left to the other dcode), or go back.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from dcode.agent.session_lock import SessionHeld

FORK, LEAVE = "fork", "leave"


class SessionHeldScreen(ModalScreen[bool]):
    """Dismisses with True to fork the session, False to go back (``leave`` names that)."""

    DEFAULT_CSS = """
    SessionHeldScreen {
        align: center middle;
    }
    SessionHeldScreen > #held-dialog {
        width: 90%;
        max-width: 90;
        height: auto;
        border: round $warning;
        background: $surface;
        padding: 0 1;
    }
    #held-title {
        text-style: bold;
        color: $warning;
        padding: 0 0 1 0;
    }
    #held-why {
        color: $text-muted;
        padding: 0 0 1 0;
    }
    #held-choices {
        height: auto;
        border: none;
        background: $surface;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "fork", "Fork", show=False),
        Binding("escape,q,b", "leave", "Back", show=False),
    ]

    def __init__(self, held: SessionHeld, *, leave: str = "Back") -> None:
        super().__init__()
        self.held = held
        self.leave = leave

    def compose(self) -> ComposeResult:
        with Vertical(id="held-dialog"):
            yield Label(f"Session {self.held.session_id} is open in {self.held.holder}.", id="held-title")
            yield Static(
                "Both writing to it would lose turns, so this dcode will not. A fork continues here "
                "in a new session with a copy of its history; the original stays with the other dcode.",
                id="held-why",
            )
            yield OptionList(
                Option("Fork it into a new session  (f)", id=FORK),
                Option(f"{self.leave}  (Esc)", id=LEAVE),
                id="held-choices",
            )

    def on_mount(self) -> None:
        choices = self.query_one("#held-choices", OptionList)
        choices.highlighted = 0
        choices.focus()

    @on(OptionList.OptionSelected, "#held-choices")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id == FORK)

    def action_fork(self) -> None:
        self.dismiss(True)

    def action_leave(self) -> None:
        self.dismiss(False)
