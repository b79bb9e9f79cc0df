"""Markdown lists drawn by one widget: each item's bullet, then its text wrapped beside it.

Textual builds a list from four widgets per item (a row, its bullet, a column, the paragraph),
and a streamed answer lays all of them out again on nearly every frame; lists are most of the
widgets in a typical answer. A list whose items hold only text (paragraphs and lists of the
same kind, nested to any depth) is drawn here as lines instead, looking as Textual draws it:
the bullet in the theme's colour, the text wrapped with a hanging indent, nested lists
indented under their item. A list with anything else in an item (code, a quote, a table) is
left to Textual's own widgets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets.markdown import MarkdownBlock

from dcode.tui.textual_internals import (
    MarkdownBulletList,
    MarkdownList,
    MarkdownListItem,
    MarkdownOrderedList,
    MarkdownParagraph,
    child_blocks,
    inline_content,
    replace_block,
)

BULLET = ".list-block--bullet"  # a component class, resolved by the block when drawn


@dataclass(frozen=True)
class ListItem:
    symbol: str  # with its trailing space: "• ", " 2. "
    parts: tuple[Content | ListModel, ...]  # paragraphs and nested lists, in order


@dataclass(frozen=True)
class ListModel:
    items: tuple[ListItem, ...]


def _symbols(block: MarkdownList, items: list[MarkdownListItem]) -> list[str]:
    """Each item's bullet, numbered as Textual numbers an ordered list (from its first
    item's number, right-aligned to the widest)."""
    if not isinstance(block, MarkdownOrderedList):
        return [item.bullet for item in items]
    try:
        start = int(items[0].bullet) if items else 1
    except ValueError:
        start = 1
    numbers = [f"{number}. " for number in range(start, start + len(items))]
    size = max(map(len, numbers), default=0)
    return [number.rjust(size + 1) for number in numbers]


def read_list(block: MarkdownList) -> ListModel | None:
    """The model of a parsed (not yet mounted) list block, or None when an item holds more
    than text."""
    children = child_blocks(block)
    items = [child for child in children if isinstance(child, MarkdownListItem)]
    if len(items) != len(children):
        return None
    model_items = []
    for item, symbol in zip(items, _symbols(block, items), strict=True):
        parts: list[Content | ListModel] = []
        for child in child_blocks(item):
            if isinstance(child, MarkdownParagraph):
                parts.append(inline_content(child))
            elif isinstance(child, MarkdownList) and (nested := read_list(child)) is not None:
                parts.append(nested)
            else:
                return None
        model_items.append(ListItem(symbol, tuple(parts)))
    return ListModel(tuple(model_items))


def list_lines(model: ListModel, width: int) -> list[Content]:
    """The list drawn in ``width`` cells: bullets, and the text wrapped beside them."""
    lines: list[Content] = []
    for item in model.items:
        indent = Content(item.symbol).cell_length
        room = max(1, width - indent)
        body: list[Content] = []
        for part in item.parts:
            body += part.wrap(room) if isinstance(part, Content) else list_lines(part, room)
        if not body:
            continue  # an item with nothing in it takes no line, as in Textual's list
        first, *rest = body
        lines.append(Content.assemble((item.symbol, BULLET), first))
        lines += [line.pad_left(indent) for line in rest]
    return lines


class ListLines:
    """What the two kinds of list block share: drawn as lines when their items are only text.
    A plain mixin, listed first: Textual takes a widget's CSS types (and so the Markdown
    styles) from the first base that is a widget."""

    model: ListModel | None = None
    _built: tuple[int, list[Content]] | None = None

    def compose(self) -> Iterable[Widget]:
        self.model = read_list(self)  # type: ignore[arg-type]  # a MarkdownList too
        if self.model is None:
            return super().compose()  # type: ignore[misc]  # Textual's widgets, for items with more than text
        child_blocks(self).clear()  # type: ignore[arg-type]
        return iter(())

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        if type(block) is type(self) and self.model is not None:
            model = read_list(block)  # type: ignore[arg-type]
            if model is not None:  # the same list, grown: redraw it in place
                if model != self.model:
                    self.model, self._built = model, None
                    self.refresh(layout=True)
                return
        await replace_block(self, block)  # type: ignore[arg-type]

    def lines(self, width: int) -> list[Content]:
        if self.model is None:
            return []
        if self._built is None or self._built[0] != width:
            self._built = (width, list_lines(self.model, width))
        return self._built[1]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.model is None:
            return super().get_content_height(container, viewport, width)  # type: ignore[misc]
        return len(self.lines(width))

    def render(self) -> Content:
        if self.model is None:
            return super().render()  # type: ignore[misc]
        return Content("\n").join(self.lines(self.content_size.width))  # type: ignore[attr-defined]


_BULLET_CSS = """
{name} > .list-block--bullet {{
    color: $text-primary;
}}
{name}:light > .list-block--bullet {{
    color: $text-secondary;
}}
"""


class BulletListBlock(ListLines, MarkdownBulletList):
    """A bullet list (see the module's docstring)."""

    DEFAULT_CSS = _BULLET_CSS.format(name="BulletListBlock")
    COMPONENT_CLASSES: ClassVar[set[str]] = {"list-block--bullet"}


class OrderedListBlock(ListLines, MarkdownOrderedList):
    """A numbered list (see the module's docstring)."""

    DEFAULT_CSS = _BULLET_CSS.format(name="OrderedListBlock")
    COMPONENT_CLASSES: ClassVar[set[str]] = {"list-block--bullet"}
