"""Dialogs that open by themselves never take the user's typing away.

The first-run screen and the trust question can appear while someone is typing a prompt. Their
focus starts on their text, not on a button, so letters, Space and Enter press nothing; the
printable keys typed meanwhile are kept in ``typed``, and the app puts them back in the prompt
when the dialog closes (the draft already there is untouched: the box stays mounted).
"""

from __future__ import annotations

from textual import events


class KeepsTyping:
    """Mixed into a modal screen; its ``on_key`` calls ``keep_typed``."""

    typed: str = ""

    def keep_typed(self, event: events.Key) -> bool:
        """Add a printable key to ``typed`` (Backspace takes the last one back); False for any
        other key. Enter is never kept: on the text it does nothing, and on a button the user
        tabbed to it presses the button."""
        if event.key == "enter":
            return False
        if event.is_printable and event.character:
            self.typed += event.character
        elif event.key == "backspace" and self.typed:
            self.typed = self.typed[:-1]
        else:
            return False
        return True
