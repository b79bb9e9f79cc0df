"""Markdown tables drawn by one widget: the rows as lines of text between keylines.

Textual's own table block is a grid of cell widgets, each laid out and drawn on its own, and
the grid is laid out again whenever the answer around it changes size, which a streamed
answer does on nearly every frame. Here the table is a single block whose lines are built for
its width: columns keep their natural width when the table fits, the widest ones are narrowed
to a common width (their cells wrapped) when it does not, and GFM's column alignment is kept.
A table that grows while it streams gains rows in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it.token import Token
from textual.app import ComposeResult
from textual.content import Content
from textual.geometry import Size
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from dcode.tui.textual_internals import (
    MarkdownTable,
    MarkdownTD,
    MarkdownTH,
    MarkdownTR,
    block_token,
    child_blocks,
    inline_content,
    replace_block,
)

KEYLINE = ".table-block--keyline"  # component classes, resolved by the block when drawn
HEADER = ".table-block--header"


@dataclass(frozen=True)
class TableModel:
    """A table's text: the header cells, the rows, and each column's alignment."""

    header: tuple[Content, ...]
    rows: tuple[tuple[Content, ...], ...]
    align: tuple[str, ...]  # "left", "center" or "right", one per column

    @property
    def columns(self) -> int:
        return max([len(self.header), *map(len, self.rows)])

    def cell(self, row: tuple[Content, ...], column: int) -> Content:
        return row[column] if column < len(row) else Content()

    def natural_widths(self) -> list[int]:
        return [
            max(1, *(self.cell(row, column).cell_length for row in (self.header, *self.rows)))
            for column in range(self.columns)
        ]


def column_widths(natural: Sequence[int], room: int) -> list[int]:
    """The text width of each column, given ``room`` cells for all of their text.

    Every column keeps its natural width when they all fit. Otherwise the widest are cut to
    one common width, as large as fits, and what is left over goes to them one cell each, so
    narrow columns stay whole and only the wide ones wrap. Never less than one cell.
    """
    widths = [max(1, width) for width in natural]
    if sum(widths) <= room:
        return widths
    if room <= len(widths):
        return [1] * len(widths)
    low, high = 1, max(widths)  # the largest cap whose columns fit
    while low < high:
        cap = (low + high + 1) // 2
        if sum(min(width, cap) for width in widths) <= room:
            low = cap
        else:
            high = cap - 1
    capped = [min(width, low) for width in widths]
    spare = room - sum(capped)
    for index, width in enumerate(widths):
        if spare and width > low:
            capped[index] += 1
            spare -= 1
    return capped


def _aligned(line: Content, width: int, align: str) -> Content:
    gap = max(0, width - line.cell_length)
    if align == "right":
        return line.pad_left(gap)
    if align == "center":
        return line.pad(gap // 2, gap - gap // 2)
    return line.pad_right(gap)


def table_lines(model: TableModel, width: int) -> list[Content]:
    """The table drawn in at most ``width`` cells: keylines around and between the cells,
    one space of padding either side of each cell's text."""
    columns = model.columns
    if not columns:
        return []
    widths = column_widths(model.natural_widths(), width - 3 * columns - 1)

    def rule(left: str, middle: str, right: str) -> Content:
        return Content.styled(
            left + middle.join("─" * (text + 2) for text in widths) + right, KEYLINE
        )

    def row_lines(row: tuple[Content, ...], header: bool) -> list[Content]:
        cells = []
        for column, text in enumerate(widths):
            cell = model.cell(row, column)
            if header:
                cell = cell.stylize_before(HEADER)
            cells.append(cell.wrap(text) or [Content()])
        lines = []
        for y in range(max(len(cell) for cell in cells)):
            parts: list[Content | tuple[str, str] | str] = [("│", KEYLINE)]
            for column, text in enumerate(widths):
                line = cells[column][y] if y < len(cells[column]) else Content()
                align = model.align[column] if column < len(model.align) else "left"
                parts += [" ", _aligned(line, text, align), " ", ("│", KEYLINE)]
            lines.append(Content.assemble(*parts))
        return lines

    lines = [rule("┌", "┬", "┐"), *row_lines(model.header, True)]
    for row in model.rows:
        lines += [rule("├", "┼", "┤"), *row_lines(row, False)]
    lines.append(rule("└", "┴", "┘"))
    if lines[0].cell_length > width:  # narrower than its keylines: cut, never wrap them
        lines = [line.truncate(width) for line in lines]
    return lines


def _alignment(block: MarkdownBlock) -> str:
    style = (block_token(block).attrs or {}).get("style", "")
    for align in ("center", "right", "left"):
        if f"text-align:{align}" in str(style):
            return align
    return "left"


def read_table(table: MarkdownBlock) -> TableModel:
    """The model of a parsed (not yet mounted) table block, from its row and cell blocks."""
    header: list[Content] = []
    align: list[str] = []
    rows: list[list[Content]] = []

    def walk(block: MarkdownBlock) -> None:
        for child in child_blocks(block):
            if isinstance(child, MarkdownTH):
                header.append(inline_content(child))
                align.append(_alignment(child))
            elif isinstance(child, MarkdownTR):
                rows.append([])
                walk(child)
            elif isinstance(child, MarkdownTD):
                if rows:
                    rows[-1].append(inline_content(child))
            else:
                walk(child)

    walk(table)
    body = [tuple(row) for row in rows if row]  # the header's own row has no TD cells
    return TableModel(tuple(header), tuple(body), tuple(align))


class TableBlock(MarkdownTable):
    """A Markdown table as one block (see the module's docstring)."""

    DEFAULT_CSS = """
    TableBlock {
        width: 1fr;
        height: auto;
        margin-bottom: 1;
    }
    TableBlock > .table-block--keyline {
        color: $foreground 25%;
    }
    TableBlock > .table-block--header {
        color: $primary;
        text-style: bold;
    }
    """

    COMPONENT_CLASSES = MarkdownBlock.COMPONENT_CLASSES | {
        "table-block--keyline",
        "table-block--header",
    }

    def __init__(self, markdown: Markdown, token: Token) -> None:
        super().__init__(markdown, token)
        self.model = TableModel((), (), ())
        self._built: tuple[int, list[Content]] | None = None

    def compose(self) -> ComposeResult:  # nothing to mount: the block draws the table itself
        self._set_model(read_table(self))
        child_blocks(self).clear()
        return iter(())

    def _set_model(self, model: TableModel) -> None:
        if model != self.model:
            self.model = model
            self._built = None
            self.refresh(layout=True)

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        if isinstance(block, MarkdownTable):  # the same table, grown: redraw it in place
            self._set_model(read_table(block))
            return
        await replace_block(self, block)

    def lines(self, width: int) -> list[Content]:
        if self._built is None or self._built[0] != width:
            self._built = (width, table_lines(self.model, width))
        return self._built[1]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Content:
        return Content("\n").join(self.lines(self.content_size.width))
