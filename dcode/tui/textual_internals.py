"""Every private Textual name dcode uses, and the only module that imports or touches one.

Textual's public API covers nearly everything the app does. Where it does not (a Markdown
table or list drawn by one widget instead of a grid of cell widgets, a widget rendered on its
own, a placeholder token highlighted inside a ``TextArea``, whether the user scrolled away from
the transcript's end, the clock that stamps key events),
dcode reaches into Textual here, under names of its own, and nowhere else. A private method
that dcode overrides cannot move into this module; it is listed, with the file that overrides
it. ``PRIVATE_USES`` lists every name with the dcode files that rely on it and the tests that
exercise that reliance; ``tests/test_framework_internals.py`` checks each name against the
installed Textual, and fails on any private import or attribute outside this module.
pyproject.toml keeps Textual below its next major version.

Markdown is loaded only after the first frame, while the prompt imports this module before it,
so the Markdown block classes are looked up when first asked for (the module's ``__getattr__``).
"""

# Any: Textual's private Markdown classes are looked up by name, with no public types

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Unpack, cast

from textual._compositor import Compositor  # loaded with textual.screen in any case

from dcode.framework_internals import PrivateUse, Shape

if TYPE_CHECKING:
    from collections import defaultdict

    from markdown_it.token import Token
    from textual.content import Content
    from textual.geometry import Size
    from textual.strip import Strip
    from textual.widget import Widget
    from textual.widgets import TextArea
    from textual.widgets._markdown import (
        MarkdownBulletList,
        MarkdownList,
        MarkdownListItem,
        MarkdownOrderedList,
        MarkdownParagraph,
        MarkdownTable,
        MarkdownTD,
        MarkdownTH,
        MarkdownTR,
    )
    from textual.widgets.markdown import MarkdownBlock
    from textual.widgets.text_area import TextAreaTheme

__all__ = [
    "PRIVATE_USES",
    "MarkdownBulletList",
    "MarkdownList",
    "MarkdownListItem",
    "MarkdownOrderedList",
    "MarkdownParagraph",
    "MarkdownTD",
    "MarkdownTH",
    "MarkdownTR",
    "MarkdownTable",
    "anchor_released",
    "block_token",
    "child_blocks",
    "draw_offscreen",
    "event_clock",
    "forget_rendered_lines",
    "highlights",
    "inline_content",
    "prime_textual_image",
    "replace_block",
    "syntax_theme",
]

MARKDOWN = "textual.widgets._markdown"  # the block classes with no public path
BLOCK = "textual.widgets.markdown:MarkdownBlock"  # public; its underscored attributes are not

# The block classes Textual builds a parsed Markdown document from: the ``Markdown*`` names of
# ``__all__``. Only ``MarkdownBlock`` (and ``MarkdownStream``) are public
# (``textual.widgets.markdown``); a table's rows and cells and a list's items are not, yet
# reading a parsed table or list means telling them apart, and drawing one as a single block
# means subclassing Textual's own table and list blocks.
_MARKDOWN_CLASSES = frozenset(name for name in __all__ if name.startswith("Markdown"))


def __getattr__(name: str) -> Any:
    if name in _MARKDOWN_CLASSES:
        from textual.widgets import _markdown

        value = getattr(_markdown, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- Markdown blocks: a table or a list drawn by one widget (table_block.py, list_block.py)


def child_blocks(block: MarkdownBlock) -> list[MarkdownBlock]:
    """The blocks a parsed block holds before it is mounted (``MarkdownBlock._blocks``).

    Textual parses a whole document into blocks first and mounts each block's children from
    this list in its ``compose``, which then empties it. No public API shows a parsed block's
    children: a block that draws them itself reads them here, and clears the list so that
    nothing else mounts them."""
    return block._blocks


def inline_content(block: MarkdownBlock) -> Content:
    """The styled text of a paragraph or table cell (``MarkdownBlock._content``): the same
    ``Content`` Textual would show, links and inline styles included. Public only once the
    block is mounted and rendered, which is the cost a one-widget table avoids."""
    return block._content


def block_token(block: MarkdownBlock) -> Token:
    """The markdown-it token a block was parsed from (``MarkdownBlock._token``), whose
    attributes carry a table cell's GFM alignment; Textual keeps no public copy of them."""
    return block._token


async def replace_block(block: MarkdownBlock, new: MarkdownBlock) -> None:
    """Textual's default when a streamed document re-parses its last block: remove ``block``
    and mount ``new`` (``MarkdownBlock._update_from_block``). A block that overrides that hook
    to grow in place falls back to this when the new block is of another kind."""
    from textual.widgets.markdown import MarkdownBlock

    await MarkdownBlock._update_from_block(block, new)


# --- rendering a widget on its own (segments.py)


def draw_offscreen(widget: Widget, size: Size) -> list[Strip]:
    """The lines ``widget`` and its descendants draw at ``size``, rendered by a compositor of
    their own (``textual._compositor``). The screen's compositor keeps only what is on screen,
    and no public API renders a widget tree that is not."""
    compositor = Compositor()
    compositor.reflow(widget, size)
    return compositor.render_strips(size)


# --- where a scrolled transcript is (transcript/view.py)


def anchor_released(widget: Widget) -> bool:
    """Whether the user scrolled an anchored widget away from its end (``Widget._anchor_released``).
    ``is_anchored`` stays True meanwhile, and no public property tells the two apart."""
    return widget._anchor_released


# --- placeholder tokens highlighted in the prompt (widgets/prompt_area.py)


def highlights(area: TextArea) -> defaultdict[int, list[tuple[int, int | None, str]]]:
    """The highlights a ``TextArea`` draws, by row: ``(start byte, end byte, name)``, the name
    looked up in its theme's ``syntax_styles`` (``TextArea._highlights``). Public highlighting
    comes only from a tree-sitter language; a token is a range of the prompt's own."""
    return cast(
        "defaultdict[int, list[tuple[int, int | None, str]]]", area._highlights
    )  # one at run time


def syntax_theme(area: TextArea) -> TextAreaTheme:
    """The theme a ``TextArea`` draws with now (``TextArea._theme``), resolved against the app's
    theme; ``TextArea.theme`` is only its name."""
    return area._theme


def forget_rendered_lines(area: TextArea) -> None:
    """Drop a ``TextArea``'s cached lines (``TextArea._line_cache``), so that a changed token
    style is drawn at the next refresh rather than when each line next changes."""
    area._line_cache.clear()


# --- the clock key events are stamped with (widgets/burst.py)

try:  # perf_counter on Windows, monotonic elsewhere; ``Message.time`` is read from it
    from textual._time import get_time as event_clock
except ImportError:  # pragma: no cover - a Textual that moved it (the contract test says so)
    event_clock = time.monotonic


# --- textual-image (dcode/tui/graphics.py)


def prime_textual_image(cell_size: tuple[int, int]) -> None:
    """Give textual-image the cell size dcode asked the terminal for before the app started.

    ``textual_image._terminal.get_cell_size`` asks the terminal once and keeps the answer in
    its ``_result`` attribute; asked while Textual reads stdin, the question would race it."""
    from textual_image._terminal import CellSize, get_cell_size

    if not hasattr(get_cell_size, "_result"):
        get_cell_size._result = CellSize(*cell_size)  # type: ignore[attr-defined]  # its cache, set by hand


# --- the list the contract test checks

TABLE_BLOCK = "dcode/tui/transcript/table_block.py"
LIST_BLOCK = "dcode/tui/transcript/list_block.py"
SEGMENTS = "dcode/tui/transcript/segments.py"
VIEW = "dcode/tui/transcript/view.py"
ANSWER = "dcode/tui/transcript/answer.py"
PLAIN_LINES = "dcode/tui/transcript/plain_lines.py"
PROMPT_AREA = "dcode/tui/widgets/prompt_area.py"
BURST = "dcode/tui/widgets/burst.py"
FRAME_RATE = "dcode/tui/frame_rate.py"
NATIVE_STDERR = "dcode/tui/native_stderr.py"
GRAPHICS = "dcode/tui/graphics.py"
CONTRACT = "tests/test_framework_internals.py"

_TABLE_TESTS = (
    "tests/test_tui_table_block.py::test_a_table_in_an_answer_is_one_block_styled_by_the_theme",
    "tests/test_tui_table_block.py::test_a_streamed_table_grows_in_place_and_ends_as_if_written_at_once",
)
_LIST_TESTS = (
    "tests/test_tui_list_block.py::test_a_list_of_text_looks_exactly_as_textual_draws_it",
    "tests/test_tui_list_block.py::test_a_list_holding_code_keeps_textuals_widgets",
    "tests/test_tui_list_block.py::test_a_streamed_list_grows_in_place_and_ends_as_if_written_at_once",
)
_TOKEN_TESTS = (
    f"{CONTRACT}::test_a_placeholder_token_is_drawn_in_its_style_and_follows_the_theme",
    "tests/test_tui_input.py::test_backspace_and_delete_remove_a_placeholder_whole",
)


def _markdown(
    name: str, users: tuple[str, ...], tests: tuple[str, ...], **shape: Unpack[Shape]
) -> PrivateUse:
    return PrivateUse("textual", f"{MARKDOWN}:{name}", users, tests, **shape)


def _block(
    name: str, users: tuple[str, ...], tests: tuple[str, ...], **shape: Unpack[Shape]
) -> PrivateUse:
    return PrivateUse("textual", f"{BLOCK}.{name}", users, tests, **shape)


def _text_area(name: str, tests: tuple[str, ...], **shape: Unpack[Shape]) -> PrivateUse:
    return PrivateUse("textual", f"textual.widgets:TextArea.{name}", (PROMPT_AREA,), tests, **shape)


PRIVATE_USES: tuple[PrivateUse, ...] = (
    # Markdown tables: ``TableBlock`` is Textual's table block, drawn as lines of text.
    _markdown("MarkdownTable", (TABLE_BLOCK,), _TABLE_TESTS, bases=(BLOCK,)),
    _markdown(
        "MarkdownTable.__init__",
        (TABLE_BLOCK,),
        _TABLE_TESTS,
        parameters=("self", "markdown", "token"),
    ),
    *(
        _markdown(cell, (TABLE_BLOCK,), _TABLE_TESTS, bases=(BLOCK,))
        for cell in ("MarkdownTH", "MarkdownTR", "MarkdownTD")
    ),
    # Markdown lists: ``BulletListBlock``/``OrderedListBlock`` are Textual's list blocks, drawn
    # as lines when their items hold only text.
    _markdown("MarkdownList", (LIST_BLOCK,), _LIST_TESTS, bases=(BLOCK,)),
    *(
        _markdown(kind, (LIST_BLOCK,), _LIST_TESTS, bases=(f"{MARKDOWN}:MarkdownList",))
        for kind in ("MarkdownBulletList", "MarkdownOrderedList")
    ),
    *(
        _markdown(kind, (LIST_BLOCK,), _LIST_TESTS, bases=(BLOCK,))
        for kind in ("MarkdownListItem", "MarkdownParagraph")
    ),
    _markdown(
        "MarkdownListItem.bullet",
        (LIST_BLOCK,),
        _LIST_TESTS,
        instance=True,
        value_type="builtins:str",
    ),
    # What a parsed block holds (child_blocks, inline_content, block_token).
    _block(
        "_blocks",
        (TABLE_BLOCK, LIST_BLOCK),
        _TABLE_TESTS + _LIST_TESTS,
        instance=True,
        value_type="builtins:list",
        behaviour="a parsed block's children wait here until its compose mounts them",
    ),
    _block(
        "_content",
        (TABLE_BLOCK, LIST_BLOCK),
        _TABLE_TESTS + _LIST_TESTS,
        instance=True,
        value_type="textual.content:Content",
    ),
    _block(
        "_token",
        (TABLE_BLOCK,),
        (
            "tests/test_tui_table_block.py::test_a_table_is_drawn_with_keylines_and_its_alignment",
            *_TABLE_TESTS,
        ),
        instance=True,
        value_type="markdown_it.token:Token",
    ),
    # Overridden by TableBlock and ListLines (a table or list that grows while streaming
    # redraws in place), and called for Textual's default (replace_block).
    _block(
        "_update_from_block",
        (TABLE_BLOCK, LIST_BLOCK),
        (
            "tests/test_tui_table_block.py::test_a_streamed_table_grows_in_place_and_ends_as_if_written_at_once",
            "tests/test_tui_list_block.py::test_a_streamed_list_grows_in_place_and_ends_as_if_written_at_once",
        ),
        parameters=("self", "block"),
        behaviour="Markdown.append hands the re-parsed last block to the last mounted block's hook",
    ),
    # A finished segment of an answer folded into a picture of itself (draw_offscreen).
    PrivateUse(
        "textual",
        "textual._compositor:Compositor.reflow",
        (SEGMENTS,),
        (
            "tests/test_tui_segments.py::test_a_long_answer_is_segmented_folded_and_unfolded",
            "tests/test_tui_segments.py::test_unfolded_segments_look_as_they_did_before_folding",
        ),
        parameters=("self", "parent", "size"),
    ),
    PrivateUse(
        "textual",
        "textual._compositor:Compositor.render_strips",
        (SEGMENTS,),
        ("tests/test_tui_segments.py::test_unfolded_segments_look_as_they_did_before_folding",),
        parameters=("self", "size"),
    ),
    # Whether the transcript follows the stream (anchor_released).
    PrivateUse(
        "textual",
        "textual.widget:Widget._anchor_released",
        (VIEW,),
        ("tests/test_tui_segments.py::test_reading_further_up_keeps_segments",),
        instance=True,
        value_type="builtins:bool",
        behaviour="True from release_anchor() until the widget is scrolled back to its end",
    ),
    # The prompt's TextArea keeps a placeholder token whole: PromptArea overrides the two hooks
    # every keyboard edit goes through (typing, Backspace, Delete, cut, paste), to widen an
    # edit to whole tokens and never type into one. The public ``edit`` sees every edit,
    # programmatic ones too, which must not be widened.
    _text_area(
        "_delete_via_keyboard",
        ("tests/test_tui_input.py::test_backspace_and_delete_remove_a_placeholder_whole",),
        parameters=("self", "start", "end"),
    ),
    _text_area(
        "_replace_via_keyboard",
        (
            "tests/test_tui_input.py::test_typed_lookalike_is_sent_literally",
            "tests/test_tui_input.py::test_a_selection_that_cuts_into_a_placeholder_takes_it_whole",
        ),
        parameters=("self", "insert", "start", "end"),
    ),
    # ... and draws tokens in their style. TextArea's highlights come only from a tree-sitter
    # language: PromptArea adds its tokens' ranges when the map is rebuilt, and the token style
    # to the theme whenever the theme is set (highlights, syntax_theme, forget_rendered_lines).
    _text_area("_build_highlight_map", _TOKEN_TESTS, parameters=("self",)),
    _text_area("_set_theme", _TOKEN_TESTS, parameters=("self", "theme")),
    _text_area(
        "_highlights",
        _TOKEN_TESTS,
        instance=True,
        value_type="collections:defaultdict",
        behaviour="rows of (start byte, end byte, highlight name), names looked up in the theme's syntax_styles",
    ),
    _text_area(
        "_theme", _TOKEN_TESTS, instance=True, value_type="textual.widgets.text_area:TextAreaTheme"
    ),
    _text_area("_line_cache", _TOKEN_TESTS, instance=True, value_type="textual.cache:LRUCache"),
    # Burst detection compares key events' times with this clock (event_clock).
    PrivateUse(
        "textual",
        "textual._time:get_time",
        (BURST,),
        (
            f"{CONTRACT}::test_key_events_are_stamped_with_the_event_clock",
            "tests/test_tui_media.py::test_burst_timer_releases_typed_keys_in_real_time",
        ),
        behaviour="a clock function taking no arguments, which Message.time is read from",
    ),
    # Public names whose behaviour dcode relies on beyond what Textual documents.
    # PlainLines renders one line of a plain container and repeats it.
    PrivateUse(
        "textual",
        "textual.widget:Widget.render_lines",
        (PLAIN_LINES,),
        (
            "tests/test_tui_plain_lines.py::test_the_repeated_line_is_the_ordinary_rendering",
            "tests/test_tui_plain_lines.py::test_a_bordered_container_is_drawn_the_ordinary_way",
        ),
        parameters=("self", "crop"),
        behaviour="renders exactly the lines of crop, one Strip each",
    ),
    # An answer's segment folds once the screen has laid it out whole.
    PrivateUse(
        "textual",
        "textual.widget:Widget.arrange",
        (ANSWER,),
        ("tests/test_tui_segments.py::test_a_long_answer_is_segmented_folded_and_unfolded",),
        parameters=("self", "size", "optimal"),
        behaviour="returns the arrangement the compositor laid out, cached per size",
    ),
    PrivateUse(
        "textual",
        "textual.layout:DockArrangeResult.total_region",
        (ANSWER,),
        ("tests/test_tui_segments.py::test_a_long_answer_is_segmented_folded_and_unfolded",),
    ),
    PrivateUse(
        "textual",
        "textual.screen:Screen.screen_layout_refresh_signal",
        (VIEW,),
        (
            "tests/test_tui_segments.py::test_the_answer_is_whole_on_screen_when_the_model_is_done",
            "tests/test_tui_segments.py::test_a_long_answer_is_segmented_folded_and_unfolded",
        ),
        instance=True,
        value_type="textual.signal:Signal",
        behaviour="published after each layout of the screen, once it is painted",
    ),
    # Behaviour with no name in dcode at all.
    PrivateUse(
        "textual",
        "textual.constants:MAX_FPS",
        (FRAME_RATE,),
        (
            "tests/test_tui_frame_rate.py::test_the_cap_is_raised_and_not_passed_on",
            "tests/test_tui_frame_rate.py::test_the_users_own_setting_wins",
        ),
        behaviour="read from TEXTUAL_FPS once, when textual.constants is first imported",
    ),
    PrivateUse(
        "textual",
        "textual.drivers.linux_driver:LinuxDriver",
        (NATIVE_STDERR,),
        (f"{CONTRACT}::test_the_terminal_driver_draws_on_the_stderr_it_finds_when_made",),
        behaviour="the driver draws on sys.__stderr__ as it is when the app starts, not on file descriptor 2",
    ),
    # textual-image sizes pictures by the cell size it asks the terminal for, once, and asks
    # whether Sixel and Kitty's protocol work when ``textual_image.renderable`` is imported,
    # unless ``sys.__stdout__`` is None then. Both questions read stdin, which Textual owns
    # once the app runs: dcode asks before, and primes the answer.
    PrivateUse(
        "textual-image",
        "textual_image._terminal:get_cell_size",
        (GRAPHICS,),
        ("tests/test_tui_video.py::test_textual_image_loads_without_asking_the_terminal",),
        parameters=(),
        behaviour=(
            "keeps its answer in get_cell_size._result and returns it without asking again; "
            "textual_image.renderable asks nothing when sys.__stdout__ is None at import"
        ),
    ),
)
