"""Atomic tokens inside the prompt draft: ``[Pasted text #1 +40 lines]`` now, ``[image 1]`` next.

A placeholder is bound by identity and position, never recognised by its text: the registry
records where each token sits in the draft, moves it on every edit, and forgets it as soon as an
edit cuts into it. A typed lookalike is therefore plain text. Each *kind* of placeholder is one
``PlaceholderSource``: it decides whether a paste becomes a token (``on_paste``), what the token
turns into on send (``expand``), and optionally how it survives in the prompt history
(``dump``/``load``). A media tracker is one more source; nothing here changes for it.

This module has no Textual import so the bookkeeping is unit-testable on its own.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol

_ids = itertools.count(1)


@dataclass(eq=False, slots=True)
class Placeholder:
    """One bound token. Compared by identity: two tokens with the same label are different."""

    kind: str
    label: str
    start: int
    payload: object = None
    number: int = 0
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def end(self) -> int:
        return self.start + len(self.label)

    def copy(self) -> Placeholder:
        return replace(self)


@dataclass(frozen=True, slots=True)
class Draft:
    """A snapshot of the input box: its raw text and the tokens bound in it."""

    text: str
    placeholders: tuple[Placeholder, ...] = ()

    def to_json(self, sources: dict[str, PlaceholderSource]) -> dict[str, object] | None:
        """The draft as JSON, keeping only tokens whose source can persist them."""
        items = []
        for token in self.placeholders:
            source = sources.get(token.kind)
            data = source.dump(token) if source else None
            if data is not None:
                items.append(
                    {
                        "kind": token.kind,
                        "label": token.label,
                        "start": token.start,
                        "number": token.number,
                        "data": data,
                    }
                )
        return {"text": self.text, "placeholders": items} if items else None

    @classmethod
    def from_json(cls, raw: object, sources: dict[str, PlaceholderSource]) -> Draft | None:
        """Rebuild a persisted draft; None when it is malformed or no token can be restored."""
        if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
            return None
        text: str = raw["text"]
        tokens: list[Placeholder] = []
        for item in raw.get("placeholders") or ():
            if not isinstance(item, dict):
                continue
            kind, label, start = item.get("kind"), item.get("label"), item.get("start")
            source = sources.get(kind) if isinstance(kind, str) else None
            if (
                source is None
                or not isinstance(kind, str)
                or not isinstance(label, str)
                or not isinstance(start, int)
            ):
                continue
            if text[start : start + len(label)] != label:
                continue
            payload = source.load(label, item.get("data"))
            if payload is None:
                continue
            number = item.get("number")
            tokens.append(
                Placeholder(kind, label, start, payload, number if isinstance(number, int) else 0)
            )
        return cls(text, tuple(tokens)) if tokens else None


class PlaceholderHost(Protocol):
    """What a source may do to the input box while it handles a paste."""

    @property
    def placeholders(self) -> PlaceholderRegistry: ...

    def insert_text(self, text: str) -> None: ...

    def insert_placeholder(self, kind: str, label: str, payload: object = None) -> Placeholder: ...


class PlaceholderSource:
    """One kind of placeholder. Subclass it and register it with ``PromptInput.add_source``."""

    kind: ClassVar[str] = ""

    def on_paste(self, text: str, host: PlaceholderHost) -> bool:
        """Claim a paste (insert tokens and/or text through ``host``) and return True, or decline.

        Keep it quick: it runs on the UI thread. Slow work (decoding media) belongs in a worker
        that inserts the token when done.
        """
        return False

    def expand(self, placeholder: Placeholder) -> str:
        """The text that replaces the token when the prompt is sent."""
        return placeholder.label

    def removed(self, placeholder: Placeholder) -> None:
        """The token left the draft (deleted, cut into, cleared). Advisory: undo may bring it back."""

    def dump(self, placeholder: Placeholder) -> object | None:
        """JSON-able data to keep the token collapsed in the prompt history, or None."""
        return None

    def load(self, label: str, data: object) -> object | None:
        """The payload rebuilt from ``dump``'s data, or None to leave the label as plain text."""
        return None

    def allow_submit(self, placeholders: tuple[Placeholder, ...]) -> bool:
        """Whether a prompt holding these tokens (all of this kind) may be sent now.

        Return False to keep the draft in the box unsent, after telling the user why (media
        still being attached, a video that cannot be sent). Only asked when the draft holds
        at least one token of this kind.
        """
        return True


class PastedTextSource(PlaceholderSource):
    """Collapses a long paste into ``[Pasted text #N +L lines]``; the full text is sent."""

    kind: ClassVar[str] = "paste"

    def __init__(self, *, max_chars: int = 800, max_lines: int = 2) -> None:
        self.max_chars = max_chars
        self.max_lines = max_lines

    def should_collapse(self, text: str) -> bool:
        return len(text) > self.max_chars or len(text.splitlines()) > self.max_lines

    def on_paste(self, text: str, host: PlaceholderHost) -> bool:
        if not self.should_collapse(text):
            return False
        number = host.placeholders.next_number(self.kind)
        lines = max(1, len(text.splitlines()))
        host.insert_placeholder(self.kind, f"[Pasted text #{number} +{lines} lines]", text)
        return True

    def expand(self, placeholder: Placeholder) -> str:
        return str(placeholder.payload)

    def dump(self, placeholder: Placeholder) -> object | None:
        return placeholder.payload if isinstance(placeholder.payload, str) else None

    def load(self, label: str, data: object) -> object | None:
        return data if isinstance(data, str) else None


class PlaceholderRegistry:
    """The tokens bound in one draft, kept in document order, with the sources that make them."""

    def __init__(self, sources: Iterable[PlaceholderSource] = ()) -> None:
        self._items: list[Placeholder] = []
        self._sources: list[PlaceholderSource] = list(sources)
        self._counters: dict[str, int] = {}

    # --- sources

    def add_source(self, source: PlaceholderSource, *, first: bool = True) -> None:
        """Register a kind. ``first`` lets it see pastes before the sources already registered."""
        self._sources = [s for s in self._sources if s.kind != source.kind]
        if first:
            self._sources.insert(0, source)
        else:
            self._sources.append(source)

    @property
    def sources(self) -> tuple[PlaceholderSource, ...]:
        return tuple(self._sources)

    @property
    def sources_by_kind(self) -> dict[str, PlaceholderSource]:
        return {source.kind: source for source in self._sources}

    def source_for(self, kind: str) -> PlaceholderSource | None:
        return next((s for s in self._sources if s.kind == kind), None)

    # --- contents

    def __iter__(self) -> Iterator[Placeholder]:
        return iter(tuple(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def of_kind(self, kind: str) -> list[Placeholder]:
        return [token for token in self._items if token.kind == kind]

    def next_number(self, kind: str) -> int:
        """A number for a new token of ``kind``, unique within this draft."""
        number = self._counters.get(kind, 0) + 1
        self._counters[kind] = number
        return number

    def add(self, kind: str, label: str, start: int, payload: object = None) -> Placeholder:
        """Bind a token whose label has just been written at ``start``."""
        number = self._counters.get(kind, 0)
        token = Placeholder(kind, label, start, payload, number)
        self._items.append(token)
        self._items.sort(key=lambda item: item.start)
        return token

    def discard(self, token: Placeholder) -> bool:
        """Unbind one token (matched by id) without touching the text or telling its source."""
        kept = [item for item in self._items if item.id != token.id]
        found = len(kept) != len(self._items)
        self._items = kept
        return found

    def containing(self, offset: int) -> Placeholder | None:
        """The token with ``offset`` strictly inside it (not at either edge)."""
        return next((t for t in self._items if t.start < offset < t.end), None)

    def widen(self, start: int, end: int) -> tuple[int, int]:
        """Grow a non-empty range so that it covers every token it touches, whole."""
        start, end = sorted((start, end))
        if start == end:
            return start, end
        for token in self._items:
            if token.start < end and start < token.end:
                start, end = min(start, token.start), max(end, token.end)
        return start, end

    # --- keeping positions in step with the text

    def apply_edit(self, start: int, end: int, inserted: int) -> list[Placeholder]:
        """Text in ``[start, end)`` was replaced by ``inserted`` characters.

        Tokens before the edit stay, tokens after it shift, tokens it cuts into are dropped.
        An insertion exactly at a token's edge leaves the token whole.
        """
        delta = inserted - (end - start)
        kept: list[Placeholder] = []
        dropped: list[Placeholder] = []
        for token in self._items:
            if token.end <= start:
                kept.append(token)
            elif token.start >= end:
                token.start += delta
                kept.append(token)
            else:
                dropped.append(token)
        self._items = kept
        self._notify_removed(dropped)
        return dropped

    def resync(self, old: str, new: str) -> list[Placeholder]:
        """Follow an edit known only by its before and after text (undo, redo)."""
        # the text's characters are compared, not a path's parts
        prefix = len(os.path.commonprefix([old, new]))  # noqa: RUF071
        limit = min(len(old), len(new)) - prefix
        suffix = min(len(os.path.commonprefix([old[::-1], new[::-1]])), limit)  # noqa: RUF071
        dropped = self.apply_edit(prefix, len(old) - suffix, len(new) - suffix - prefix)
        return dropped + self.validate(new)

    def validate(self, text: str) -> list[Placeholder]:
        """Drop any token whose label is no longer exactly where the registry says."""
        bad = [t for t in self._items if text[t.start : t.end] != t.label]
        if bad:
            self._items = [t for t in self._items if t not in bad]
            self._notify_removed(bad)
        return bad

    # --- send, snapshot, restore

    def expand(self, text: str) -> str:
        """The draft with every bound token replaced by its source's expansion."""
        parts: list[str] = []
        cursor = 0
        for token in self._items:
            if text[token.start : token.end] != token.label:
                continue
            source = self.source_for(token.kind)
            parts.append(text[cursor : token.start])
            parts.append(source.expand(token) if source else token.label)
            cursor = token.end
        parts.append(text[cursor:])
        return "".join(parts)

    def snapshot(self, text: str) -> Draft:
        return Draft(text, tuple(token.copy() for token in self._items))

    def restore(self, draft: Draft, *, offset: int = 0) -> None:
        """Bind the draft's tokens (shifted by ``offset``) in addition to the current ones."""
        for token in draft.placeholders:
            copy = token.copy()
            copy.start += offset
            self._items.append(copy)
            self._counters[copy.kind] = max(self._counters.get(copy.kind, 0), copy.number)
        self._items.sort(key=lambda item: item.start)

    def clear(self, *, notify: bool = True) -> None:
        dropped, self._items = self._items, []
        self._counters.clear()
        if notify:
            self._notify_removed(dropped)

    def _notify_removed(self, tokens: Iterable[Placeholder]) -> None:
        for token in tokens:
            source = self.source_for(token.kind)
            if source is not None:
                source.removed(token)
