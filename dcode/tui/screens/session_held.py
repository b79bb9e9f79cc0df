"""Asked when the session to open is open in another dcode.

Two processes writing one session would each lose the other's turns, so this one does not
write to it: it can continue in a fork (a new session with a copy of the history as it is now,
the original left to the other dcode), or go back.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets.option_list import Option

from dcode.agent.store.base import SessionHeld
from dcode.tui.screens.option_dialog import OptionDialog

FORK, LEAVE = "fork", "leave"


class SessionHeldScreen(OptionDialog[bool]):
    """Dismisses with True to fork the session, False to go back (``leave`` names that)."""

    NAME = "held"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "fork", "Fork", show=False),
        Binding("escape,q,b", "leave", "Back", show=False),
    ]

    def __init__(self, held: SessionHeld, *, leave: str = "Back") -> None:
        super().__init__(classes="-warning")
        self.held = held
        self.leave = leave

    def question(self) -> str:
        return f"Session {self.held.session_id} is open in {self.held.holder}."

    def explanation(self) -> str:
        return (
            "Both writing to it would lose turns, so this dcode will not. A fork continues here "
            "in a new session with a copy of its history; the original stays with the other dcode."
        )

    def answers(self) -> list[Option]:
        return [
            Option("Fork it into a new session  (f)", id=FORK),
            Option(f"{self.leave}  (Esc)", id=LEAVE),
        ]

    def answered(self, option_id: str) -> None:
        self.dismiss(option_id == FORK)

    def action_fork(self) -> None:
        self.dismiss(True)

    def action_leave(self) -> None:
        self.dismiss(False)
