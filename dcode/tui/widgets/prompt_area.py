"""The editable part of the prompt: a ``TextArea`` whose placeholders behave as single tokens.

Every edit goes through ``edit()``, where the registry learns exactly which range changed; undo
and redo, which bypass it, are followed by comparing the text before and after (and by recalling
the tokens bound the last time the draft had that exact text, so undoing a deletion brings a
paste back whole). Keyboard deletions are widened to whole tokens, the cursor is kept out of
their interior, and tokens are drawn in the ``prompt-area--token`` style.

Key handling that needs the rest of the input (Enter, popups, history) is delegated to the
``PromptKeys`` owner; this class only knows about text and tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Protocol

from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.widgets import TextArea
from textual.widgets.text_area import Document, Edit, EditResult, Location, Selection

from dcode.tui.textual_internals import forget_rendered_lines, highlights, syntax_theme
from dcode.tui.widgets.placeholders import Draft, Placeholder, PlaceholderRegistry

TOKEN_HIGHLIGHT = "dcode.placeholder"
_STATE_MEMORY = 200


class PromptKeys(Protocol):
    """The owner that decides what Enter, Tab, Esc and Up/Down mean right now."""

    def handle_prompt_key(self, event: events.Key) -> bool: ...

    def history_step(self, older: bool) -> bool: ...


class KeyFilter(Protocol):
    """Sees each key before the editor does (e.g. burst detection for unbracketed pastes)."""

    def filter_key(self, event: events.Key) -> bool:
        """True when the filter took the key (it may insert it later)."""
        ...

    def flush(self) -> None:
        """Apply any keys held back, now: called before a paste so the order is kept."""
        ...


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


class PromptArea(TextArea):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"prompt-area--token"}

    # Keys the app also wants (quit, $EDITOR, clipboard media) are passed on when there is
    # nothing for the editor to do with them.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d", "delete_right_or_skip", "Delete right", show=False),
        Binding("ctrl+x", "cut_or_skip", "Cut", show=False),
        # The prompt is a few lines high; a page key is for the transcript above it.
        Binding("pageup", "app.scroll_transcript(-1)", "Scroll up", show=False),
        Binding("pagedown", "app.scroll_transcript(1)", "Scroll down", show=False),
    ]

    DEFAULT_CSS = """
    PromptArea {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: tall $border-blurred;
        padding: 0 1;
        background: $surface;
        &:focus {
            border: tall $border;
        }
        & > .prompt-area--token {
            color: $accent;
            text-style: bold;
        }
    }
    """

    def __init__(
        self,
        owner: PromptKeys,
        registry: PlaceholderRegistry,
        *,
        placeholder: str = "",
        id: str | None = None,
    ) -> None:
        self._owner = owner
        self.placeholders = registry
        self._syncing = False
        self._states: dict[str, tuple[Placeholder, ...]] = {}
        self.key_filter: KeyFilter | None = None
        # Ctrl+V asks this first (an image clipboard reader); True means it took the paste over.
        self.clipboard_paste: Callable[[], bool] | None = None
        super().__init__(
            "",
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=placeholder,
            id=id,
        )

    # --- offsets

    @property
    def plain_document(self) -> Document:
        """The prompt's text, a ``Document``: TextArea's type for it is the base, without offsets."""
        document = self.document
        assert isinstance(document, Document)
        return document

    def offset_of(self, location: Location) -> int:
        return self.plain_document.get_index_from_location(location)

    def location_of(self, offset: int) -> Location:
        return self.plain_document.get_location_from_index(max(0, min(offset, len(self.text))))

    @property
    def cursor_offset(self) -> int:
        return self.offset_of(self.cursor_location)

    # --- drafts

    def snapshot(self) -> Draft:
        return self.placeholders.snapshot(self.text)

    def set_draft(self, draft: Draft, *, notify: bool = False) -> None:
        """Replace everything with ``draft`` (text and tokens), cursor at the end, undo reset."""
        self._syncing = True
        try:
            super().load_text(draft.text)
        finally:
            self._syncing = False
        self.placeholders.clear(notify=notify)
        self.placeholders.restore(draft)
        self._states.clear()
        self._after_sync()
        self.move_cursor(self.document.end)

    def load_text(self, text: str) -> None:
        """Loading raw text (e.g. ``text = ...``) unbinds every token."""
        self.set_draft(Draft(normalize_newlines(text)), notify=True)

    # --- inserting

    def insert_text(self, text: str) -> None:
        """Insert at the cursor (replacing any selection) and put the cursor after it."""
        result = self._replace_via_keyboard(normalize_newlines(text), *self.selection)
        if result is not None:
            self.move_cursor(result.end_location)

    def insert_placeholder(self, kind: str, label: str, payload: object = None) -> Placeholder:
        """Write ``label`` at the cursor and bind it as a token of ``kind``."""
        self.insert_text(label)
        token = self.placeholders.add(kind, label, self.cursor_offset - len(label), payload)
        self._after_sync()
        return token

    def replace_offsets(self, start: int, end: int, text: str) -> None:
        result = self._replace_via_keyboard(text, self.location_of(start), self.location_of(end))
        if result is not None:
            self.move_cursor(result.end_location)

    def handle_paste(self, text: str) -> None:
        """Offer a paste to each placeholder source in turn; unclaimed, it goes in as text."""
        text = normalize_newlines(text)
        if not text or self.read_only:
            return
        for source in self.placeholders.sources:
            if source.on_paste(text, self):
                return
        self.insert_text(text)

    async def on_paste(self, event: events.Paste) -> None:
        event.prevent_default()  # TextArea's own handler would insert the raw text as well
        event.stop()
        if self.key_filter is not None:
            self.key_filter.flush()
        self.handle_paste(event.text)

    def action_paste(self) -> None:
        if self.key_filter is not None:
            self.key_filter.flush()
        if self.clipboard_paste is not None and self.clipboard_paste():
            return
        if not self.app.clipboard:
            raise SkipAction()
        self.handle_paste(self.app.clipboard)

    def action_delete_right_or_skip(self) -> None:
        if not self.text:
            raise SkipAction()
        self.action_delete_right()

    def action_cut_or_skip(self) -> None:
        if self.selection.is_empty:
            raise SkipAction()
        self.action_cut()

    # --- keys

    async def on_key(self, event: events.Key) -> None:
        if self.key_filter is not None and self.key_filter.filter_key(event):
            event.stop()
            event.prevent_default()
            return
        if self._owner.handle_prompt_key(event):
            event.stop()
            event.prevent_default()

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        return key == "enter" or super().check_consume_key(key, character)

    def action_cursor_up(self, select: bool = False) -> None:
        if select or not self._owner.history_step(older=True):
            super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if select or not self._owner.history_step(older=False):
            super().action_cursor_down(select)

    @property
    def on_first_row(self) -> bool:
        return self.navigator.is_first_wrapped_line(self.cursor_location)

    @property
    def on_last_row(self) -> bool:
        return self.navigator.is_last_wrapped_line(self.cursor_location)

    # --- keeping tokens in step with edits

    def edit(self, edit: Edit) -> EditResult:
        start = self.offset_of(edit.top)
        end = self.offset_of(edit.bottom)
        self._syncing = True
        try:
            result = super().edit(edit)
        finally:
            self._syncing = False
        self.placeholders.apply_edit(start, end, self.offset_of(result.end_location) - start)
        self._after_sync()
        return result

    def undo(self) -> None:
        self._follow(super().undo)

    def redo(self) -> None:
        self._follow(super().redo)

    def _follow(self, operation: Callable[[], None]) -> None:
        before = self.text
        current = list(self.placeholders)
        self._syncing = True
        try:
            operation()
        finally:
            self._syncing = False
        after = self.text
        remembered = self._states.get(after)
        if remembered is None:
            self.placeholders.resync(before, after)
        else:
            self.placeholders.clear(notify=False)
            self.placeholders.restore(Draft(after, remembered))
            kept = {token.id for token in remembered}
            for token in current:
                source = self.placeholders.source_for(token.kind)
                if token.id not in kept and source is not None:
                    source.removed(token)
        self._after_sync()

    def _after_sync(self) -> None:
        text = self.text
        self.placeholders.validate(text)
        self._states.pop(text, None)
        self._states[text] = tuple(token.copy() for token in self.placeholders)
        while len(self._states) > _STATE_MEMORY:
            self._states.pop(next(iter(self._states)))
        self._build_highlight_map()
        self.refresh()
        self._snap_cursor(None)

    def _widen(self, start: Location, end: Location) -> tuple[Location, Location]:
        if start == end or not self.placeholders:
            return start, end
        low, high = self.offset_of(start), self.offset_of(end)
        wide = self.placeholders.widen(low, high)
        if wide == tuple(sorted((low, high))):
            return start, end
        return self.location_of(wide[0]), self.location_of(wide[1])

    def _delete_via_keyboard(self, start: Location, end: Location) -> EditResult | None:
        return super()._delete_via_keyboard(*self._widen(start, end))

    def _replace_via_keyboard(
        self, insert: str, start: Location, end: Location
    ) -> EditResult | None:
        if start == end and (token := self.placeholders.containing(self.offset_of(start))):
            start = end = self.location_of(token.end)  # never type into a token's middle
        return super()._replace_via_keyboard(insert, *self._widen(start, end))

    def watch_selection(self, previous: Selection, selection: Selection) -> None:
        if not self._syncing:
            self._snap_cursor(previous)

    def _snap_cursor(self, previous: Selection | None) -> None:
        """Keep a bare cursor out of a token's interior, moving on in the direction it came from."""
        selection = self.selection
        if not selection.is_empty or not self.placeholders:
            return
        offset = self.offset_of(selection.end)
        token = self.placeholders.containing(offset)
        if token is None:
            return
        came_from = self.offset_of(previous.end) if previous is not None else offset
        if came_from <= token.start:
            target = token.end
        elif came_from >= token.end:
            target = token.start
        else:
            target = token.start if offset - token.start <= token.end - offset else token.end
        self.selection = Selection.cursor(self.location_of(target))

    # --- drawing tokens

    def _build_highlight_map(self) -> None:
        super()._build_highlight_map()
        # TextArea's own __init__ builds the map once, before this class has set its registry.
        registry: PlaceholderRegistry | None = getattr(self, "placeholders", None)
        if not registry:
            return
        document = self.plain_document
        for token in registry:
            try:
                row, column = document.get_location_from_index(token.start)
            except ValueError:
                continue
            line = document.get_line(row)
            start = len(line[:column].encode("utf-8"))
            highlights(self)[row].append(
                (start, start + len(token.label.encode("utf-8")), TOKEN_HIGHLIGHT)
            )

    def _set_theme(self, theme: str) -> None:
        super()._set_theme(theme)
        self._install_token_style()

    def on_mount(self) -> None:
        self._install_token_style()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self.is_attached:
            # The component styles are refreshed after this node's: read them once it's done.
            self.call_after_refresh(self._install_token_style)

    def _install_token_style(self) -> None:
        if not self.is_attached:
            return
        try:
            style = self.get_component_rich_style("prompt-area--token")
        except (KeyError, AttributeError):
            return
        theme = syntax_theme(self)
        theme.syntax_styles = {**theme.syntax_styles, TOKEN_HIGHLIGHT: style}
        forget_rendered_lines(self)
        self.refresh()
