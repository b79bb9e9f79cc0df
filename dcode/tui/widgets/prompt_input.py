"""The prompt box: multi-line input with history, collapsed pastes, ``@path`` and ``/`` completion.

Keys (when the box has focus):

- Enter sends. Shift+Enter, Alt+Enter, Ctrl+Enter and Ctrl+J insert a newline, and so does
  Enter right after a trailing backslash. Ctrl+J and the backslash work in every terminal; the
  modified Enters need a terminal that reports them (kitty protocol, xterm modifyOtherKeys):
  elsewhere Shift+Enter and Alt+Enter (ESC CR) reach Textual as a plain Enter.
- Up on the first row / Down on the last row walk the history; the draft comes back at the end.
- While a popup is open: Up/Down (or Ctrl+P/Ctrl+N) move, Tab accepts, Enter accepts (or sends
  when the token is already exactly the highlighted completion), Esc closes it.
- Ctrl+D (on an empty box), Ctrl+X (with no selection) and Ctrl+V (with an empty app clipboard)
  are passed on to the app's bindings.
- Ctrl+V first asks ``area.clipboard_paste`` when one is set (the media tracker reads an image
  from the system clipboard there, falling back to the text paste).

Esc is shared with the app. The box only eats an Esc that closes its own popup; everything
else reaches the app, whose Esc chain should call ``escape()`` first: it closes a popup, and a
second Esc within a second on an idle, non-empty draft clears it (undoable with Ctrl+Z).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Self

from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import OptionList, TextArea
from textual.worker import Worker, WorkerState, get_current_worker

from dcode.tui.history import HistoryEntry, PromptHistory
from dcode.tui.widgets.completion import (
    Completion,
    CompletionKind,
    CompletionPopup,
    CompletionTarget,
    find_mention,
    find_slash,
    match_commands,
    mention_completions,
    slash_completions,
)
from dcode.tui.widgets.file_index import FileIndex, FileMatch
from dcode.tui.widgets.placeholders import (
    Draft,
    PastedTextSource,
    Placeholder,
    PlaceholderRegistry,
    PlaceholderSource,
)
from dcode.tui.widgets.prompt_area import PromptArea, normalize_newlines

NEWLINE_KEYS = frozenset(
    {
        "shift+enter",
        "alt+enter",
        "ctrl+enter",
        "meta+enter",
        "ctrl+j",
        # xterm's modifyOtherKeys reports these names for modified Return
        "shift+\r",
        "alt+\r",
        "ctrl+\r",
    }
)
ESCAPE_CLEAR_WINDOW = 1.0
INLINE_MATCH_LIMIT = 5_000  # above this many paths, matching runs in a thread
DEFAULT_PLACEHOLDER = "Ask dcode…   / commands · @ files · ! shell · Shift+Enter newline"
BUSY_PLACEHOLDER = "Working…   type to queue a message · Esc interrupts"
STARTING_PLACEHOLDER = "Starting the agent…   type away: what you send goes as soon as it is ready"
NO_MODEL_PLACEHOLDER = (
    "No model yet   fix the setup, then send: dcode tries again (your message waits)"
)

_GROUP_HISTORY = "prompt-history"
_GROUP_FILES = "prompt-files"
_GROUP_MATCH = "prompt-match"

MatchResult = tuple[CompletionTarget, tuple[int, int, bool], list[FileMatch]]


class ShellMode(StrEnum):
    CONTEXT = "context"  # `!cmd`: the output goes into the model's context
    PRIVATE = "private"  # `!!cmd`: the output is shown, never sent


_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")


def find_mentions(text: str, workspace: Path) -> tuple[str, ...]:
    """The ``@path`` tokens in ``text`` naming an existing path inside the workspace, in order."""
    root = workspace.resolve()
    found: list[str] = []
    for match in _MENTION.finditer(text):
        relative = match.group(1).rstrip(".,;:!?)]}\"'")
        if not relative or relative in found:
            continue
        target = (root / relative).resolve()
        if target.is_relative_to(root) and target.exists():
            found.append(relative)
    return tuple(found)


def split_prompt(raw: str, expanded: str) -> tuple[ShellMode | None, str]:
    """Decide the mode from the typed text and return the text to send.

    The prefix is read from ``raw`` (what was typed), so a paste that starts with ``!`` does not
    turn into a shell command; the body comes from ``expanded`` (pastes filled in).
    """
    lead = raw.lstrip()
    if lead.startswith("!!"):
        return ShellMode.PRIVATE, expanded.lstrip()[2:].strip()
    if lead.startswith("!"):
        return ShellMode.CONTEXT, expanded.lstrip()[1:].strip()
    return None, expanded.strip()


class PromptInput(Widget):
    """The input box. Post ``Submitted``; never talks to the agent itself."""

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        layout: vertical;
        &.-busy > PromptArea {
            border: tall $secondary;
        }
    }
    """

    busy: var[bool] = var(False, toggle_class="-busy")
    starting: var[bool] = var(False)
    """The engine is still loading: what is sent now waits for it (the placeholder says so)."""
    no_model: var[bool] = var(False)
    """No model can be reached yet: what is sent tries the setup again (the placeholder says so)."""

    @dataclass
    class Submitted(Message):
        """A prompt to send. ``shell`` is None for the model, else how to run ``text`` in a shell."""

        text: str
        shell: ShellMode | None = None
        placeholders: tuple[Placeholder, ...] = ()  # the tokens that were bound (all kinds)
        draft: Draft | None = None  # the box as it was, for restoring an interrupted prompt
        mentions: tuple[str, ...] = ()  # `@path`s naming existing workspace paths, relative
        prompt_input: PromptInput | None = field(default=None, repr=False)

        @property
        def control(self) -> PromptInput | None:
            return self.prompt_input

    class EscapedTwice(Message):
        """Esc twice on an empty prompt while nothing runs (the app opens ``/rewind``)."""

    class FilesArrived(Message, bubble=False):
        """Posted by the file walk's thread: the index grew or finished, so match again."""

    def __init__(
        self,
        history_path: Path,
        workspace: Path,
        *,
        id: str | None = None,
        classes: str | None = None,
        placeholder: str = DEFAULT_PLACEHOLDER,
        busy_placeholder: str = BUSY_PLACEHOLDER,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.workspace = workspace
        self.history = PromptHistory(history_path, cwd=workspace)
        self.files = FileIndex(workspace)
        self.placeholders = PlaceholderRegistry([PastedTextSource()])
        self.idle_placeholder = placeholder
        self.busy_placeholder = busy_placeholder
        self._area = PromptArea(self, self.placeholders, placeholder=placeholder)
        self._popup = CompletionPopup()
        self._commands: list[tuple[str, str]] = []
        self._history_draft: Draft | None = None
        self._last_sent: Draft | None = None
        self._dismissed: tuple[CompletionKind, int] | None = None
        self._last_escape = 0.0
        self._scanning = False
        self._mentions_for: tuple[CompletionTarget, tuple[int, int, bool]] | None = None
        self._matching: tuple[Worker[MatchResult], CompletionTarget] | None = None

    def compose(self) -> ComposeResult:
        yield self._popup
        yield self._area

    def on_mount(self) -> None:
        self.run_worker(self.history.load, thread=True, group=_GROUP_HISTORY, exit_on_error=False)

    # --- public API

    @property
    def area(self) -> PromptArea:
        return self._area

    @property
    def popup(self) -> CompletionPopup:
        return self._popup

    @property
    def text(self) -> str:
        """The raw draft (placeholders as their labels)."""
        return self._area.text

    @property
    def last_draft(self) -> Draft | None:
        return self._last_sent

    @property
    def popup_open(self) -> bool:
        return self._popup.is_open

    def focus(self, scroll_visible: bool = True) -> Self:
        self._area.focus(scroll_visible)
        return self

    def set_commands(self, commands: list[tuple[str, str]]) -> None:
        """Slash commands for the ``/`` popup: (name without the slash, description)."""
        self._commands = list(commands)
        if self._popup.is_open:
            self._refresh_popup()

    def add_source(self, source: PlaceholderSource) -> None:
        """Plug in another placeholder kind (e.g. media); it sees pastes before the built-ins."""
        self.placeholders.add_source(source, first=True)

    def insert_text(self, text: str) -> None:
        self._area.insert_text(text)

    def clear(self) -> None:
        self._popup.hide()
        self.history.reset()
        self._history_draft = None
        self._area.set_draft(Draft(""), notify=True)

    def restore(self, value: str | Draft) -> None:
        """Put a prompt back (queued or interrupted). Anything typed since goes after it."""
        draft = Draft(normalize_newlines(value)) if isinstance(value, str) else value
        current = self._area.snapshot()
        if current.text.strip():
            offset = len(draft.text) + 1
            shifted = []
            for token in current.placeholders:
                copy = token.copy()
                copy.start += offset
                shifted.append(copy)
            draft = Draft(f"{draft.text}\n{current.text}", (*draft.placeholders, *shifted))
        self.history.reset()
        self._history_draft = None
        self._show_quietly(draft)

    def replace(self, draft: Draft) -> None:
        """Make ``draft`` the input's whole content (the external editor's result)."""
        self.history.reset()
        self._history_draft = None
        self._show_quietly(draft)
        self.focus()

    def restore_sent(self, text: str) -> None:
        """Put back a prompt sent earlier (``/rewind``): as the newest history entry with that
        text kept it, its images bound again while they are stored; else the text alone."""
        wanted = text.strip()
        entry = next(
            (e for e in reversed(self.history.entries) if e.text == wanted and e.draft is not None),
            None,
        )
        draft = (
            Draft.from_json(entry.draft, self.placeholders.sources_by_kind)
            if entry is not None
            else None
        )
        self.restore(draft or text)

    def restore_last(self) -> bool:
        """Bring back the last sent prompt, pastes and all; False if nothing was sent yet."""
        if self._last_sent is None:
            return False
        self.restore(self._last_sent)
        return True

    def submit(self) -> bool:
        """Send the draft as if Enter was pressed; False when there is nothing to send, or a
        placeholder source refused it (the draft then stays in the box)."""
        draft = self._area.snapshot()
        expanded = self.placeholders.expand(draft.text)
        shell, body = split_prompt(draft.text, expanded)
        # Sources first: a paste still being looked at is an empty-looking draft that must wait.
        if not self._sources_allow(draft) or not body.strip():
            return False
        self.history.append(
            expanded.strip(), draft=draft.to_json(self.placeholders.sources_by_kind)
        )
        self._last_sent = draft
        self._popup.hide()
        self._dismissed = None
        self._history_draft = None
        # The tokens leave with the message, not by deletion: sources are not told to drop them.
        self._area.set_draft(Draft(""), notify=False)
        self.post_message(
            self.Submitted(
                text=body,
                shell=shell,
                placeholders=draft.placeholders,
                draft=draft,
                mentions=find_mentions(body, self.workspace) if shell is None else (),
                prompt_input=self,
            )
        )
        return True

    def _sources_allow(self, draft: Draft) -> bool:
        """Ask each source with tokens in the draft whether it may be sent (see ``allow_submit``)."""
        for source in self.placeholders.sources:
            mine = tuple(token for token in draft.placeholders if token.kind == source.kind)
            if mine and not source.allow_submit(mine):
                return False
        return True

    def escape(self) -> bool:
        """The app's Esc chain asks this first. True when the Esc was used here."""
        if self._popup.is_open:
            self._close_popup()
            return True
        now = time.monotonic()
        if not self.busy and now - self._last_escape <= ESCAPE_CLEAR_WINDOW:
            self._last_escape = 0.0
            if self.text.strip():
                area = self._area
                area.delete((0, 0), area.document.end, maintain_selection_offset=False)
            else:
                self.post_message(self.EscapedTwice())
            return True
        self._last_escape = now
        return False

    def watch_busy(self) -> None:
        self._show_placeholder()

    def watch_starting(self) -> None:
        self._show_placeholder()

    def watch_no_model(self) -> None:
        self._show_placeholder()

    def _show_placeholder(self) -> None:
        if self.no_model:
            self._area.placeholder = NO_MODEL_PLACEHOLDER
        elif self.starting:
            self._area.placeholder = STARTING_PLACEHOLDER
        else:
            self._area.placeholder = self.busy_placeholder if self.busy else self.idle_placeholder

    # --- keys (called by PromptArea)

    def handle_prompt_key(self, event: events.Key) -> bool:
        key = event.key
        if self._popup.is_open and self._popup_key(key):
            return True
        if key in NEWLINE_KEYS:
            self._area.insert_text("\n")
            return True
        if key == "enter":
            area = self._area
            offset = area.cursor_offset
            if area.selection.is_empty and offset and area.text[offset - 1] == "\\":
                area.replace_offsets(offset - 1, offset, "\n")
            else:
                self.submit()
            return True
        return False

    def enter_past_popup(self) -> None:
        """Enter for a line that arrived whole with it (one write from tmux, expect, voice
        typing): it sends the line as written, never a completion the popup offered for it."""
        if self._popup.is_open:
            self._close_popup()
        self.handle_prompt_key(events.Key("enter", "\r"))

    def _popup_key(self, key: str) -> bool:
        popup = self._popup
        match key:
            case "up" | "ctrl+p":
                popup.move(-1)
            case "down" | "ctrl+n":
                popup.move(1)
            case "escape":
                self._close_popup()
            case "tab":
                if (completion := popup.current) is not None:
                    self._accept(completion)
                else:
                    self._close_popup()
            case "enter":
                completion = popup.current
                if completion is None:
                    return False
                target = popup.target
                if (
                    target is not None
                    and completion.value.strip() == self.text[target.start : target.end]
                ):
                    return False  # already complete: let Enter send it
                self._accept(completion)
            case _:
                return False
        return True

    def history_step(self, older: bool) -> bool:
        """Up on the first row / Down on the last row; False lets the cursor move instead."""
        if self._popup.is_open:
            return False
        area = self._area
        if older:
            if not area.on_first_row:
                return False
            entry = self.history.previous()
            if entry is None:
                return False
            if self._history_draft is None:
                self._history_draft = area.snapshot()
            self._show_entry(entry)
            return True
        if not self.history.navigating or not area.on_last_row:
            return False
        entry = self.history.next()
        if entry is None:
            draft, self._history_draft = self._history_draft or Draft(""), None
            self._show_quietly(draft)
        else:
            self._show_entry(entry)
        return True

    def _show_entry(self, entry: HistoryEntry) -> None:
        draft = None
        if entry.draft is not None:
            draft = Draft.from_json(entry.draft, self.placeholders.sources_by_kind)
        self._show_quietly(draft or Draft(entry.text))

    def _show_quietly(self, draft: Draft) -> None:
        """Load a draft without popping up completion for what it happens to end with."""
        self._area.set_draft(draft)
        self._popup.hide()
        target = self._target()
        self._dismissed = (target.kind, target.start) if target else None

    # --- completion

    @on(TextArea.Changed)
    @on(TextArea.SelectionChanged)
    def _draft_moved(self, event: TextArea.Changed | TextArea.SelectionChanged) -> None:
        if event.text_area is self._area:
            self._refresh_popup()

    @on(OptionList.OptionSelected)
    def _option_clicked(self, event: OptionList.OptionSelected) -> None:
        if event.option_list is not self._popup:
            return
        event.stop()
        completion = self._popup.completion_at(event.option_index)
        if completion is not None:
            self._accept(completion)
        self._area.focus()

    def _target(self) -> CompletionTarget | None:
        area = self._area
        if not area.selection.is_empty:
            return None
        text, cursor = area.text, area.cursor_offset
        if self.placeholders.containing(cursor):
            return None
        target = find_slash(text, cursor) if self._commands else None
        return target or find_mention(text, cursor)

    def _refresh_popup(self) -> None:
        target = self._target()
        if target is None:
            self._dismissed = None
            self._popup.hide()
            return
        if self._dismissed == (target.kind, target.start):
            self._popup.hide()
            return
        self._dismissed = None
        if target.kind is CompletionKind.SLASH:
            matches = match_commands(target.query, self._commands)
            if matches:
                self._popup.show(target, slash_completions(matches))
            else:
                self._popup.hide()
            return
        self._ensure_index()
        self._offer_files(target)

    def _offer_files(self, target: CompletionTarget) -> None:
        files = self.files
        if self._popup.is_open and self._mentions_for == (target, files.version):
            return  # a text change and a cursor move arrive for each key: match once
        if not files.ready:
            self._popup.show(target, [], note="Indexing files…")
        elif files.complete and not files.capped and files.size <= INLINE_MATCH_LIMIT:
            self._show_mentions(target, files.version, files.match(target.query))
        elif self._matching is None or self._matching[1] != target:
            worker = self.run_worker(
                partial(self._match_in_thread, target),
                thread=True,
                group=_GROUP_MATCH,
                exclusive=True,
                exit_on_error=False,
            )
            self._matching = (worker, target)
        # else: the match under way looks again when it ends, if more files arrived meanwhile

    def _match_in_thread(self, target: CompletionTarget) -> MatchResult:
        version = self.files.version  # read first: files arriving during the match make it stale
        return target, version, self.files.match(target.query)

    def _show_mentions(
        self, target: CompletionTarget, version: tuple[int, int, bool], matches: list[FileMatch]
    ) -> None:
        matches = [match for match in matches if match.path != target.query]
        footer = ""
        if self.files.capped:
            footer = f"index stopped at {self.files.files:,} files; type more of the path"
        elif not self.files.complete:
            footer = f"indexing… {self.files.files:,} files so far"
        self._popup.show(
            target, mention_completions(matches), note="No matching files", footer=footer
        )
        self._mentions_for = (target, version)

    def _ensure_index(self) -> None:
        if self._scanning or not self.files.stale():
            return
        self._scanning = True
        self.run_worker(self._walk_files, thread=True, group=_GROUP_FILES, exit_on_error=False)

    def _walk_files(self) -> None:
        worker = get_current_worker()
        self.files.scan(stop=lambda: worker.is_cancelled, progress=self._post_files_arrived)

    def _post_files_arrived(self) -> None:
        self.post_message(
            self.FilesArrived()
        )  # from the walk's thread: post_message is thread-safe

    def on_prompt_input_files_arrived(self, event: FilesArrived) -> None:
        event.stop()
        self._files_changed()

    def _files_changed(self) -> None:
        """Match the open ``@`` token again; only keys start a walk, so walks never chain."""
        target = self._target()
        if self._popup.is_open and target is not None and target.kind is CompletionKind.MENTION:
            self._offer_files(target)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group not in (_GROUP_FILES, _GROUP_MATCH, _GROUP_HISTORY):
            return
        event.stop()
        if worker.group == _GROUP_FILES and worker.is_finished:
            self._scanning = False
            if event.state is not WorkerState.SUCCESS and not self.files.ready:
                self.files.set_paths([])  # nothing to offer, but stop "Indexing…"
            self._files_changed()
        elif worker.group == _GROUP_MATCH and worker.is_finished:
            if self._matching is not None and self._matching[0] is worker:
                self._matching = None
            if event.state is WorkerState.SUCCESS and worker.result is not None:
                self._matched(*worker.result)

    def _matched(
        self, target: CompletionTarget, version: tuple[int, int, bool], matches: list[FileMatch]
    ) -> None:
        if self._target() != target or self._dismissed is not None:
            return
        self._show_mentions(target, version, matches)
        if version != self.files.version:
            self._offer_files(target)  # files arrived while it matched

    def _accept(self, completion: Completion) -> None:
        shown = self._popup.target
        self._popup.hide()
        target = self._target()  # re-read: keys may have arrived after the popup was drawn
        if target is None or shown is None or target.kind is not shown.kind:
            return
        value, text = completion.value, self.text
        if value.endswith(" ") and text[target.end : target.end + 1] == " ":
            value = value[:-1]  # reuse the space already there
            self._area.replace_offsets(target.start, target.end, value)
            self._area.move_cursor(self._area.location_of(target.start + len(value) + 1))
            return
        self._area.replace_offsets(target.start, target.end, value)

    def _close_popup(self) -> None:
        target = self._popup.target
        self._popup.hide()
        if target is not None:
            self._dismissed = (target.kind, target.start)
