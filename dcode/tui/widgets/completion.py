"""The completion popup under the prompt, and the rules for what the cursor is completing.

``find_mention`` and ``find_slash`` look at the draft text and the cursor offset and say which
token, if any, is being completed. ``CompletionPopup`` is an ``OptionList`` that never takes
focus, so typing stays in the input while it is open.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from dcode.terminal_text import is_safe, safe_text
from dcode.tui.widgets.file_index import FileMatch


class CompletionKind(StrEnum):
    MENTION = "mention"
    SLASH = "slash"


@dataclass(frozen=True, slots=True)
class CompletionTarget:
    """The token under the cursor: ``text[start:end]`` is replaced when a completion is accepted."""

    kind: CompletionKind
    start: int
    end: int
    query: str


def find_mention(text: str, cursor: int) -> CompletionTarget | None:
    """``@query`` ending at the cursor, where ``@`` starts a word (so ``me@host`` is not one)."""
    start = cursor
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:cursor]
    if not word.startswith("@"):
        return None
    end = cursor
    while end < len(text) and not text[end].isspace():
        end += 1
    return CompletionTarget(CompletionKind.MENTION, start, end, word[1:])


def find_slash(text: str, cursor: int) -> CompletionTarget | None:
    """``/name`` at the very start of the draft, with the cursor still inside the name."""
    if not text.startswith("/"):
        return None
    head = text[:cursor]
    if any(char.isspace() for char in head):
        return None
    end = cursor
    while end < len(text) and not text[end].isspace():
        end += 1
    return CompletionTarget(CompletionKind.SLASH, 0, end, head[1:])


def match_commands(query: str, commands: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Name prefix matches first, then names or descriptions containing the query."""
    needle = query.lower()
    prefix = [cmd for cmd in commands if cmd[0].lower().startswith(needle)]
    rest = [
        cmd
        for cmd in commands
        if cmd not in prefix and (needle in cmd[0].lower() or (needle and needle in cmd[1].lower()))
    ]
    return prefix + rest


@dataclass(frozen=True, slots=True)
class Completion:
    value: str  # what replaces the token, e.g. "@src/app.py " or "/model "
    label: Content


def mention_completions(matches: list[FileMatch]) -> list[Completion]:
    completions = []
    for match in matches:
        label = Content(safe_text(match.path))  # a file's name may hold anything
        if is_safe(match.path):  # else the positions no longer point at the same characters
            for position in match.positions:
                label = label.stylize("$accent bold", position, position + 1)
        suffix = "" if match.path.endswith("/") else " "
        completions.append(Completion(f"@{match.path}{suffix}", label))
    return completions


def slash_completions(commands: list[tuple[str, str]]) -> list[Completion]:
    width = max((len(name) for name, _ in commands), default=0) + 3
    return [
        Completion(
            f"/{name} ",
            Content.assemble(
                (safe_text(f"/{name}").ljust(width), "$accent"),
                (safe_text(description), "$text-muted"),
            ),
        )
        for name, description in commands
    ]


class CompletionPopup(OptionList, can_focus=False):
    """Suggestions for the token under the cursor. Its owner drives it; it never takes focus."""

    DEFAULT_CSS = """
    CompletionPopup {
        display: none;
        height: auto;
        max-height: 10;
        margin: 0 1;
        border: round $border;
        background: $surface;
        padding: 0;
        border-subtitle-color: $text-muted;
        border-subtitle-style: italic;
        &.-open {
            display: block;
        }
        & > .option-list--option {
            padding: 0 1;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._completions: list[Completion] = []
        self.target: CompletionTarget | None = None

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def show(
        self,
        target: CompletionTarget,
        completions: list[Completion],
        note: str = "",
        footer: str = "",
    ) -> None:
        """Open (or refresh) with these completions; a ``note`` stands in when there are none.
        A ``footer`` (what the list may be missing) sits in the bottom border, seen however far
        the list is scrolled. Refreshed for the same token (more files arrived), the highlighted
        completion stays highlighted."""
        kept = self.current.value if self.current is not None and self.target == target else None
        self.target = target
        self._completions = completions
        options: list[Option] = [
            Option(completion.label, id=str(index)) for index, completion in enumerate(completions)
        ]
        if not options and note:
            options = [Option(Content.styled(note, "$text-muted italic"), disabled=True)]
        if not options:
            self.hide()
            return
        self.set_options(options)
        self.border_subtitle = Content(footer)
        values = [completion.value for completion in completions]
        self.highlighted = values.index(kept) if kept in values else (0 if completions else None)
        self.add_class("-open")

    def hide(self) -> None:
        self.target = None
        self._completions = []
        self.border_subtitle = ""
        self.remove_class("-open")

    @property
    def current(self) -> Completion | None:
        index = self.highlighted
        if index is None or not self.is_open or index >= len(self._completions):
            return None
        return self._completions[index]

    def completion_at(self, index: int) -> Completion | None:
        return self._completions[index] if 0 <= index < len(self._completions) else None

    def move(self, step: int) -> None:
        if not self._completions:
            return
        index = self.highlighted if self.highlighted is not None else -step
        self.highlighted = (index + step) % len(self._completions)
