"""Markdown lists in answers: lists of text drawn by one block, looking as Textual draws them,
grown in place while an answer streams; lists holding more than text keep Textual's widgets."""

from __future__ import annotations

import pytest
from rich.style import Style
from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownFence

from dcode.tui.transcript.answer import AnswerDocument
from dcode.tui.transcript.list_block import (
    BulletListBlock,
    ListItem,
    ListModel,
    OrderedListBlock,
    list_lines,
)

LISTS = (
    "Intro.\n\n"
    "- a first item with **enough** words to wrap around the `narrow` width of the screen\n"
    "- second, with a break  \n  before this\n  - nested one\n  - nested [link](https://example.com)\n    1. deeper\n"
    "- third\n\n"
    "3. three\n4. four\n5. five\n6. six\n7. seven\n8. eight\n9. nine\n10. ten\n\n"
    "End."
)


def test_items_wrap_beside_their_bullets_and_nested_lists_indent() -> None:
    nested = ListModel((ListItem("▪ ", (Content("inner"),)),))
    model = ListModel(
        (ListItem("• ", (Content("one two three four"), nested)), ListItem("• ", (Content("b"),)))
    )
    assert [line.plain for line in list_lines(model, 10)] == [
        "• one two",
        "  three",
        "  four",
        "  ▪ inner",
        "• b",
    ]


class Document(App[None]):
    def __init__(self, markdown: str | None, kind: type[Markdown] = AnswerDocument) -> None:
        super().__init__()
        self.markdown, self.kind = markdown, kind
        self.links: list[str] = []

    def compose(self) -> ComposeResult:
        yield self.kind(self.markdown)

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        self.links.append(event.href)


def shown(app: App[None]) -> list[list[tuple[str, Style]]]:
    """What a terminal shows, cell by cell: the character, its background, and its colour and
    attributes unless it is a space (where only the background shows)."""
    rows = []
    for strip in app.screen._compositor.render_strips(app.screen.size):
        row = []
        for segment in strip.discard_meta():
            style = segment.style or Style()
            for char in segment.text:
                colour = None if char == " " else style.color
                row.append(
                    (
                        char,
                        Style(
                            color=colour,
                            bgcolor=style.bgcolor,
                            bold=style.bold,
                            italic=style.italic,
                            underline=style.underline,
                            dim=style.dim,
                            reverse=style.reverse,
                        ),
                    )
                )
        rows.append(row)
    return rows


async def screen_of(
    markdown: str, kind: type[Markdown], theme: str
) -> list[list[tuple[str, Style]]]:
    app = Document(markdown, kind)
    async with app.run_test(size=(40, 24)) as pilot:
        app.theme = theme
        await pilot.pause()
        if kind is AnswerDocument:
            assert len(app.query(BulletListBlock)) == 1 and len(app.query(OrderedListBlock)) == 1
            assert not app.query(BulletListBlock).first().children  # one block, no widgets inside
        return shown(app)


@pytest.mark.parametrize(
    "markdown", [LISTS, "- a loose list\n\n- with an empty item\n\n-\n\n1) and a numbered one\n"]
)
async def test_a_list_of_text_looks_exactly_as_textual_draws_it(markdown: str) -> None:
    for theme in ("textual-dark", "textual-light"):
        assert await screen_of(markdown, AnswerDocument, theme) == await screen_of(
            markdown, Markdown, theme
        )


async def test_a_list_holding_code_keeps_textuals_widgets() -> None:
    markdown = "- run this:\n\n  ```\n  make test\n  ```\n- then that\n"
    app = Document(markdown)
    async with app.run_test(size=(40, 14)) as pilot:
        await pilot.pause()
        block = app.query_one(BulletListBlock)
        assert block.model is None and block.query(MarkdownFence)
        assert "make test" in "".join(
            strip.text for strip in app.screen._compositor.render_strips(app.screen.size)
        )


async def test_a_link_in_an_item_can_be_clicked() -> None:
    app = Document("- see [the docs](https://example.com/docs)\n")
    async with app.run_test(size=(40, 6)) as pilot:
        await pilot.pause()
        await pilot.click(app.query_one(BulletListBlock), offset=(8, 0))
        await pilot.pause()
        assert app.links == ["https://example.com/docs"]


async def test_a_streamed_list_grows_in_place_and_ends_as_if_written_at_once() -> None:
    app = Document(None)
    async with app.run_test(size=(40, 24)) as pilot:
        document = app.query_one(AnswerDocument)
        blocks: set[int] = set()
        # Line by line: a piece ending in a lone "-" would read, for a moment, as a heading's
        # underline, and the list would be rebuilt as Textual's widgets until the next piece.
        for line in LISTS.splitlines(keepends=True):
            await document.append(line)
            await pilot.pause()
            blocks.update(id(block) for block in app.query(BulletListBlock))
        streamed = shown(app)
        assert len(blocks) == 1  # the list gained items in its one block
    whole = Document(LISTS)
    async with whole.run_test(size=(40, 24)) as pilot:
        await pilot.pause()
        assert shown(whole) == streamed
