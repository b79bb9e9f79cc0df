"""Pick a model for ``/model``: recent, configured and preset models, filtered as you type.

Dismisses with the chosen spec, which the app switches to as ``/model SPEC`` would; with
``provider:`` for a provider whose model name is the user's to type (the app puts
``/model provider:`` in the input); or None on Esc. A ``provider:model`` typed in the search box
that no row names can be chosen as it is.
"""

from __future__ import annotations

from textual.content import Content

from dcode.models.choices import ModelChoice
from dcode.models.media_support import GUESSED_MARK
from dcode.terminal_text import safe_text
from dcode.tui.screens.picker import FilterPicker, PickerRow

CURRENT_MARK = "●"
PROBLEM_MARK = GUESSED_MARK


class ModelScreen(FilterPicker[ModelChoice]):
    NAME = "model"
    HEADING = "Switch the model (the conversation continues)"
    PLACEHOLDER = "Filter, or type provider:model…"

    DEFAULT_CSS = """
    ModelScreen > .picker-dialog {
        max-width: 100;
    }
    ModelScreen .picker-status {
        height: auto;
        max-height: 3;
    }
    """

    def __init__(self, choices: list[ModelChoice], *, current: str) -> None:
        super().__init__(
            [
                PickerRow(choice, choice.spec, choice.spec.lower(), self._label(choice, current))
                for choice in choices
            ]
        )
        self.current = current

    @staticmethod
    def _label(choice: ModelChoice, current: str) -> Content:
        is_current = choice.spec == current
        mark = (f"{CURRENT_MARK} ", "$text-success") if is_current else ("  ", "")
        name = safe_text(choice.spec) + (
            "…" if choice.partial else ""
        )  # a name a server may have listed
        details = "current" if is_current else choice.origin.value
        if choice.partial:
            details += " · type the model name"
        parts: list[tuple[str, str] | str] = [
            mark,
            (name, "bold" if is_current else ""),
            "  ",
            (details, "$text-muted"),
        ]
        if note := _short_note(choice):
            parts.append(
                (f"  {PROBLEM_MARK} {note}", "$text-warning")
            )  # the status line says more, when highlighted
        return Content.assemble(*parts)

    def first_highlight(self) -> int | None:
        specs = [choice.spec for choice in self.shown]
        return specs.index(self.current) if self.current in specs else None

    def status_line(self) -> str | Content:
        """The counts and keys; what is wrong with the highlighted model, if anything."""
        row = self.highlighted_row
        if row is not None and row.item.problem:
            return Content.styled(f"{PROBLEM_MARK} {safe_text(row.item.problem)}", "$text-warning")
        if row is not None and row.item.guessed:
            where = f'[models."{safe_text(row.item.spec)}"]'
            line = f"{PROBLEM_MARK} profile guessed: dcode assumes {row.item.guessed}; if wrong, set them under {where} in config.toml"
            return Content.styled(line, "$text-warning")
        if self.shown:
            return f"{len(self.shown)} of {len(self.rows)} · Enter switch · Esc cancel"
        if ":" in self.query_text:
            return Content(f"Enter switches to {safe_text(self.query_text)} · Esc cancel")
        return "No match: type provider:model to use another one · Esc cancel"

    def typed_choice(self) -> str | None:
        typed = self.query_text
        return typed if ":" in typed and " " not in typed else None


def _short_note(choice: ModelChoice) -> str:
    """The words beside the mark: what would fail, else that its profile is guessed."""
    if choice.problem:
        return choice.problem.split(":", 1)[0]  # "no API key for deepseek"; the rest on highlight
    return "profile guessed" if choice.guessed else ""
