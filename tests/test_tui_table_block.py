"""Markdown tables in answers: one block drawing its rows between keylines, sized to its width,
grown in place while an answer streams."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownTableContent

from dcode.tui.transcript.answer import AnswerDocument
from dcode.tui.transcript.table_block import (
    TableBlock,
    TableModel,
    column_widths,
    table_lines,
)

TABLE = "| field | type | default |\n|:--|:-:|--:|\n| limit | `int` | 10 |\n| seen | tuple | () |\n"


def model(*rows: tuple[str, ...], align: tuple[str, ...] = ()) -> TableModel:
    header, *body = rows
    return TableModel(
        tuple(map(Content, header)), tuple(tuple(map(Content, row)) for row in body), align
    )


# -- columns and lines --------------------------------------------------------------------


def test_columns_that_fit_keep_their_natural_width() -> None:
    assert column_widths([5, 3, 8], 40) == [5, 3, 8]


def test_only_the_widest_columns_narrow_when_they_do_not_fit() -> None:
    widths = column_widths([4, 60, 30, 6], 50)
    assert widths[0] == 4 and widths[3] == 6  # the narrow ones stay whole
    assert sum(widths) == 50 and abs(widths[1] - widths[2]) <= 1


def test_no_column_is_narrower_than_one_cell() -> None:
    assert column_widths([10, 10, 10], 2) == [1, 1, 1]
    assert column_widths([0, 4], 10) == [1, 4]


def test_a_table_is_drawn_with_keylines_and_its_alignment() -> None:
    table = model(
        ("name", "n", "note"),
        ("a", "10", "x"),
        ("bbb", "2", "yy"),
        align=("left", "right", "center"),
    )
    assert [line.plain for line in table_lines(table, 80)] == [
        "┌──────┬────┬──────┐",
        "│ name │  n │ note │",
        "├──────┼────┼──────┤",
        "│ a    │ 10 │  x   │",
        "├──────┼────┼──────┤",
        "│ bbb  │  2 │  yy  │",
        "└──────┴────┴──────┘",
    ]


def test_a_wide_cell_wraps_inside_its_column() -> None:
    table = model(
        ("key", "description"), ("k", "a sentence long enough to need three or four lines here")
    )
    lines = table_lines(table, 30)
    assert {line.cell_length for line in lines} == {30}  # every line as wide as the block
    text = " ".join(line.plain.split("│")[2].strip() for line in lines[3:-1])
    assert text == "a sentence long enough to need three or four lines here"
    assert len(lines) > 6


def test_rows_short_of_cells_are_filled_and_a_narrow_block_cuts_the_lines() -> None:
    table = model(("a", "b", "c"), ("1",))
    assert table_lines(table, 40)[3].plain == "│ 1 │   │   │"
    assert {line.cell_length for line in table_lines(table, 8)} == {8}


# -- in a document ------------------------------------------------------------------------


class Document(App[None]):
    def __init__(self, markdown: str | None) -> None:
        super().__init__()
        self.markdown = markdown
        self.links: list[str] = []

    def compose(self) -> ComposeResult:
        yield AnswerDocument(self.markdown)

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        self.links.append(event.href)


def rows(app: App[None], block: TableBlock) -> list[str]:
    strips = app.screen._compositor.render_strips(app.screen.size)
    return [
        strip.text[block.region.x : block.region.right]
        for strip in strips[block.region.y : block.region.bottom]
    ]


async def test_a_table_in_an_answer_is_one_block_styled_by_the_theme() -> None:
    app = Document(f"Before.\n\n{TABLE}\nAfter.\n")
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        block = app.query_one(TableBlock)
        assert not block.children and not app.query(MarkdownTableContent)
        assert rows(app, block)[1].startswith("│ field │ type  │ default │")
        strip = app.screen._compositor.render_strips(app.screen.size)[block.region.y + 3]
        styles = {segment.text.strip(): segment.style for segment in strip if segment.text.strip()}
        assert styles["int"] != styles["limit"]  # inline code keeps its own style
        header = {
            segment.text: segment.style
            for segment in app.screen._compositor.render_strips(app.screen.size)[block.region.y + 1]
        }
        assert header["field"].bold and header["field"].color != styles["limit"].color
        keyline_before = styles["│"].color
        app.theme = "textual-light"
        await pilot.pause()
        strip = app.screen._compositor.render_strips(app.screen.size)[block.region.y + 3]
        assert {segment.text: segment.style for segment in strip}["│"].color != keyline_before


async def test_a_link_in_a_cell_can_be_clicked() -> None:
    app = Document("| site |\n|---|\n| [docs](https://example.com/docs) |\n")
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        block = app.query_one(TableBlock)
        await pilot.click(block, offset=(3, 3))
        await pilot.pause()
        assert app.links == ["https://example.com/docs"]


async def test_a_streamed_table_grows_in_place_and_ends_as_if_written_at_once() -> None:
    text = f"Intro.\n\n{TABLE}| extra | a cell written later | 0 |\n\nDone."
    app = Document(None)
    async with app.run_test(size=(60, 24)) as pilot:
        document = app.query_one(AnswerDocument)
        blocks: set[int] = set()
        for start in range(0, len(text), 7):
            await document.append(text[start : start + 7])
            await pilot.pause()
            blocks.update(id(block) for block in app.query(TableBlock))
        streamed = rows(app, app.query_one(TableBlock))
        assert len(blocks) == 1  # rows were added to the one block, never a new one
    whole = Document(text)
    async with whole.run_test(size=(60, 24)) as pilot:
        await pilot.pause()
        assert rows(whole, whole.query_one(TableBlock)) == streamed
    assert streamed[-2].startswith("│ extra │ a cell written later │")
