"""``/rewind``: pick a prompt of this session, then what to take back to before it.

The picker lists the session's prompts newest first, each with its age and how many files
dcode's file tools changed from it on. The choice that follows says what a rewind would do to
the files (put back, deleted, or changed since by something else, whose content is kept) and
offers the conversation and the code together, or either alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets.option_list import Option

from dcode.agent.rewind.code import CodePlan
from dcode.agent.rewind.outcome import UNTRACKED
from dcode.agent.store.base import Turn
from dcode.agent.tools.formatting import plural
from dcode.terminal_text import safe_text
from dcode.tui.screens.option_dialog import OptionDialog
from dcode.tui.screens.picker import FilterPicker, PickerRow
from dcode.tui.screens.resume import format_age

BOTH, CONVERSATION, CODE = "both", "conversation", "code"
_CANCEL = "cancel"
PREVIEW_FILES = 8


def first_line(prompt: str, width: int = 100) -> str:
    line = next(
        (part.strip() for part in safe_text(prompt).splitlines() if part.strip()), "(empty prompt)"
    )
    return line if len(line) <= width else line[: width - 1] + "…"


class RewindScreen(FilterPicker[Turn]):
    """Dismisses with the chosen turn's id (as text), or None on Esc."""

    NAME = "rewind"
    HEADING = "Rewind to before a prompt"
    PLACEHOLDER = "Search your prompts…"

    DEFAULT_CSS = """
    RewindScreen > .picker-dialog {
        max-width: 120;
    }
    """

    def __init__(self, turns: list[Turn], *, now: float | None = None) -> None:
        now = time.time() if now is None else now
        super().__init__([self._row(turn, now) for turn in reversed(turns)])

    @staticmethod
    def _row(turn: Turn, now: float) -> PickerRow[Turn]:
        changed = (
            f"{plural(turn.files_changed, 'file')} changed since"
            if turn.files_changed
            else "no file changed since"
        )
        details = f"prompt {turn.number} · {format_age(now - turn.started)} · {changed}"
        label = Content.assemble((first_line(turn.prompt), "bold"), "\n", (details, "$text-muted"))
        return PickerRow(turn, str(turn.id), turn.prompt.lower(), label)

    def status_line(self) -> str:
        if not self.rows:
            return "No prompts yet."
        if not self.shown:
            return f"No match among {len(self.rows)} prompts · Esc cancel"
        return f"{len(self.shown)} of {len(self.rows)} · Enter choose · Esc cancel"


class RewindChoiceScreen(OptionDialog[str | None]):
    """Dismisses with ``BOTH``, ``CONVERSATION`` or ``CODE``, or None to leave things as they are."""

    NAME = "rewind-choice"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "choose('both')", "Both", show=False),
        Binding("c", "choose('conversation')", "Conversation", show=False),
        Binding("f", "choose('code')", "Code", show=False),
        Binding("escape,q", "choose('cancel')", "Cancel", show=False),
    ]

    def __init__(self, turn: Turn, plan: CodePlan, *, shown: Callable[[Path], str] = str) -> None:
        super().__init__()
        self.turn = turn
        self.plan = plan
        self.shown = shown

    @property
    def offers_code(self) -> bool:
        return bool(self.plan.files)

    def question(self) -> str:
        return f"Rewind to before prompt {self.turn.number}: {first_line(self.turn.prompt, 70)}"

    def explanation(self) -> str:
        files = self.plan.files
        if not files:
            return f"No file needs putting back: dcode's file tools changed nothing since that is not already as it was. ({UNTRACKED}.)"
        lines = [f"The code: {plural(len(files), 'file')} dcode changed since would be put back:"]
        for file in files[:PREVIEW_FILES]:
            what = {
                "delete": "deleted (dcode created it)",
                "restore": "put back",
                "not kept": "cannot be put back (too large to have been kept)",
            }[file.action]
            if file.changed_outside and file.action != "not kept":
                what += "; changed since by something else, its content is kept aside first"
            lines.append(f"  {self.shown(file.path)}: {what}")
        if len(files) > PREVIEW_FILES:
            lines.append(f"  … and {len(files) - PREVIEW_FILES} more")
        lines.append(f"Only dcode's own file edits are tracked: {UNTRACKED}.")
        return "\n".join(lines)

    def answers(self) -> list[Option]:
        options = [Option("Conversation and code  (b)", id=BOTH)] if self.offers_code else []
        options.append(
            Option("Conversation only: the files stay as they are  (c)", id=CONVERSATION)
        )
        if self.offers_code:
            options.append(Option("Code only: the conversation goes on  (f)", id=CODE))
        options.append(Option("Cancel  (Esc)", id=_CANCEL))
        return options

    def answered(self, option_id: str) -> None:
        self.action_choose(option_id)

    def action_choose(self, choice: str) -> None:
        if choice in (BOTH, CODE) and not self.offers_code:
            return  # not offered: there is no file to put back
        self.dismiss(None if choice == _CANCEL else choice)
