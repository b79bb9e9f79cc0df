"""Long streamed answers: segments cut at safe places, folded out of sight, unfolded on scroll,
and full collections held back while text streams."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBlock

from dcode.tui.collector import DEFERRED_THRESHOLD, QuietCollector
from dcode.tui.transcript.answer import AssistantMessage
from dcode.tui.transcript.segments import FoldedSegment, segment_cut
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import running_app, screen_cells

# -- where a segment may end --------------------------------------------------------------


def test_no_cut_before_the_minimum() -> None:
    assert segment_cut("", "one\n\ntwo\n\nthree", minimum=100) is None


def test_cut_at_a_blank_line_before_a_new_block() -> None:
    text = "a" * 20 + "\n\nNext paragraph"
    assert segment_cut("", text, minimum=10) == 22
    assert text[22:] == "Next paragraph"


def test_cut_counts_what_the_segment_already_holds() -> None:
    # 8 characters already in the segment, 4 more before the blank line: 12 >= 10.
    assert segment_cut("12345678", "abcd\n\nrest", minimum=10) == 6


def test_never_inside_a_code_fence() -> None:
    text = "intro\n\n```python\nx = 1\n\ny = 2\n```\n\nafter"
    assert text[segment_cut("", text, minimum=5) :].startswith("```")  # before the fence is fine
    cut = segment_cut("", text, minimum=12)
    assert cut is not None and text[cut:] == "after"


def test_never_before_an_indented_continuation() -> None:
    text = "- item one\n\n  more of item one\n\nNext"
    cut = segment_cut("", text, minimum=5)
    assert cut is not None and text[cut:] == "Next"


def test_waits_for_the_line_after_the_blank() -> None:
    assert segment_cut("", "a" * 20 + "\n\n", minimum=10) is None


# -- the collector ------------------------------------------------------------------------


@dataclass
class Collecting:
    """A QuietCollector on a hand-driven clock, with ``gc.collect`` recorded instead of run."""

    collector: QuietCollector
    now: list[float]
    collected: list[float]
    before: tuple[int, int, int]


@pytest.fixture
def collecting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collecting]:
    now = [0.0]
    collected: list[float] = []
    monkeypatch.setattr(gc, "collect", lambda *args: collected.append(now[0]) or 0)
    before = gc.get_threshold()
    try:
        yield Collecting(QuietCollector(clock=lambda: now[0]), now, collected, before)
    finally:
        gc.set_threshold(*before)


def test_full_collections_wait_while_streaming(collecting: Collecting) -> None:
    collector, now, collected, before = (
        collecting.collector,
        collecting.now,
        collecting.collected,
        collecting.before,
    )
    collector.streaming()
    assert gc.get_threshold() == (before[0], before[1], DEFERRED_THRESHOLD) and collector.deferring
    now[0] = 0.5
    collector.quiet()  # a tool starts, but a collection happened only 0.5 s ago
    assert collected == []
    now[0] = 5.0
    collector.quiet()
    assert collected == [5.0]
    now[0] = 6.0
    collector.idle()
    assert gc.get_threshold() == before and not collector.deferring and collected == [5.0, 6.0]
    collector.idle()  # nothing deferred: nothing to do
    assert collected == [5.0, 6.0]


def test_a_very_long_stream_still_collects(collecting: Collecting) -> None:
    collecting.collector.streaming()
    collecting.now[0] = 31.0
    collecting.collector.streaming()
    assert collecting.collected == [31.0] and collecting.collector.deferring


def test_imports_run_without_full_collections_and_are_frozen_after(collecting: Collecting) -> None:
    collector, before = collecting.collector, collecting.before
    frozen = gc.get_freeze_count()
    try:
        collector.loading()
        assert gc.get_threshold() == (before[0], before[1], DEFERRED_THRESHOLD)
        built = [[n] for n in range(10)]  # what an import leaves alive
        assert any(item is built[0] for item in gc.get_objects())
        collector.loaded()
        assert gc.get_threshold() == before and not collector.deferring
        assert gc.get_freeze_count() > frozen
        assert not any(item is built[0] for item in gc.get_objects())  # no collection walks it now
        assert collecting.collected == []  # freezing is not a walk of the heap
    finally:
        gc.unfreeze()


# -- in the app ---------------------------------------------------------------------------


def long_answer(sections: int = 24) -> str:
    parts = []
    for n in range(sections):
        parts.append(
            f"## Section {n}\n\nParagraph {n} explains one part of the change in a few words.\n\n"
        )
        parts.append(f"- point {n}.a\n- point {n}.b\n\n```python\nvalue_{n} = {n}\n```\n\n")
        if n % 4 == 3:
            parts.append(f"| name | value |\n|---|--:|\n| value_{n} | {n} |\n\n")
    parts.append("The last line of the answer.")
    return "".join(parts)


async def test_a_long_answer_is_segmented_folded_and_unfolded(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    answer = long_answer(60)
    step = reply(answer, chunk_size=40, chunk_delay=0.005)
    async with running_app(server, workspace, dcode_home, step, size=(100, 30)) as h:
        await h.send("explain it all")
        await h.idle()
        view = await folds(h)
        assert h.answers() == [answer]
        assert view.source == answer  # folded or not, what is shown is exactly the answer
        folded = list(view.query_children(FoldedSegment))
        segments = list(view.query_children(Markdown))
        assert folded and len(segments) >= 1
        # Folding keeps the transcript's height: the screen shows the end of the answer.
        assert "The last line of the answer." in h.text()
        # The last block has no trailing margin; the blocks before it keep theirs.
        blocks = list(view.query(MarkdownBlock))
        assert blocks[-1].styles.margin.bottom == 0
        assert blocks[-1] is segments[-1].query_children(MarkdownBlock).last()
        assert any(block.styles.margin.bottom > 0 for block in blocks[:-1])
        mounted_blocks = len(view.query(MarkdownBlock))

        h.app.transcript.scroll_home(animate=False, immediate=True)
        await h.until(
            lambda: isinstance(view.children[0], Markdown), 5, "the top segment to unfold"
        )
        await h.pilot.pause(0.1)
        assert "## Section 0" not in h.text() and "Section 0" in h.text()
        assert view.source == answer
        assert len(view.query(MarkdownBlock)) > mounted_blocks


async def test_reading_further_up_keeps_segments(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """Someone scrolled up while the answer streams: nothing they might be reading is folded
    (the same answer, followed to the end, folds: see the test above)."""
    answer = long_answer(60)
    step = reply(answer, chunk_size=40, chunk_delay=0.005)
    async with running_app(server, workspace, dcode_home, step, size=(100, 30)) as h:
        await h.send("explain it all")
        await h.until(
            lambda: len(h.answers()) == 1 and len(h.answers()[0]) > 200, 10, "the answer to start"
        )
        await h.pilot.pause(0.05)
        h.app.transcript.scroll_home(animate=False, immediate=True)
        h.app.transcript.release_anchor()
        await h.idle()
        view = h.app.query_one(AssistantMessage)
        assert not view.query_children(FoldedSegment)
        assert view.source == answer


async def test_page_keys_scroll_the_transcript_and_unfold(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    answer = long_answer(60)
    step = reply(answer, chunk_size=40, chunk_delay=0.005)
    async with running_app(server, workspace, dcode_home, step, size=(100, 30)) as h:
        await h.send("explain it all")
        await h.idle()
        transcript = h.app.transcript
        view = await folds(h)
        bottom = transcript.scroll_y
        await h.press("pageup")
        await h.pilot.pause(0.05)
        assert transcript.scroll_y < bottom and "The last line of the answer." not in h.text()
        for _ in range(60):
            if transcript.scroll_y == 0:
                break
            await h.press("pageup")
        await h.until(
            lambda: isinstance(view.children[0], Markdown), 5, "the top segment to unfold"
        )
        await h.pilot.pause(0.1)
        assert "Section 0" in h.text() and view.source == answer
        for _ in range(80):
            if transcript.scroll_y >= transcript.max_scroll_y:
                break
            await h.press("pagedown")
        await h.pilot.pause(0.1)
        assert "The last line of the answer." in h.text()
        assert (
            h.app.prompt_input.area.has_focus
        )  # the keys scrolled; typing still goes to the prompt


def answer_lines(h) -> list[str]:
    """The rows of the screen from the first line of the answer to its last."""
    lines = h.text().splitlines()
    start = next(i for i, line in enumerate(lines) if "Section 0" in line)
    end = next(i for i, line in enumerate(lines) if "The last line of the answer." in line)
    return [line.rstrip() for line in lines[start : end + 1]]


def answer_cells(h) -> list[list[tuple[str, str]]]:
    """The same rows as ``answer_lines``, with their colours and attributes."""
    lines = h.text().splitlines()
    start = next(i for i, line in enumerate(lines) if "Section 0" in line)
    end = next(i for i, line in enumerate(lines) if "The last line of the answer." in line)
    return screen_cells(h.app)[start : end + 1]


async def stream_the_answer(h) -> AssistantMessage:
    """Ask, wait for the whole answer, and for the fold of the segment finished last, which
    comes a moment after the answer ends."""
    await h.send("explain it all")
    await h.idle()
    return await folds(h)


async def folds(h) -> AssistantMessage:
    """The answer, once its finished segments have folded (a moment after its end, later on
    a busy machine)."""
    view = h.app.query_one(AssistantMessage)
    await h.until(
        lambda: not view.folds_pending and view.query_children(FoldedSegment),
        10,
        "the finished segments to fold",
    )
    return view


async def resumed_answer_cells(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    size: tuple[int, int],
    session_id: str,
) -> list[list[tuple[str, str]]]:
    """The answer's cells (text, colours and attributes, row by row) once its session is
    resumed, where it is rendered at once, as one document."""
    async with running_app(server, workspace, dcode_home, size=size, session_id=session_id) as h:
        await h.until(lambda: "The last line of the answer." in h.text(), 10, "the resumed answer")
        await h.pilot.pause(0.2)
        assert len(h.app.query_one(AssistantMessage).query_children(Markdown)) == 1
        return answer_cells(h)


async def test_a_segmented_answer_looks_like_the_same_answer_rendered_at_once(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    answer = long_answer(14)
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply(answer, chunk_size=30, chunk_delay=0.002),
        # Tall enough that the whole answer fits: a scrollbar appearing narrows the transcript,
        # and a narrower segment unfolds (its picture is of the old width).
        size=(100, 260),
    ) as h:
        view = await stream_the_answer(h)
        # Streamed in several segments, the finished ones folded into pictures of themselves.
        assert len(view.query_children(Markdown)) + len(view.query_children(FoldedSegment)) > 1
        assert any(folded.picture is not None for folded in view.query_children(FoldedSegment))
        streamed = answer_cells(h)
        session_id = h.app.runner.session_id
    assert streamed == await resumed_answer_cells(
        server, workspace, dcode_home, (100, 260), session_id
    )


async def test_unfolded_segments_look_as_they_did_before_folding(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    answer = long_answer(40)
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply(answer, chunk_size=40, chunk_delay=0.005),
        size=(100, 30),
    ) as h:
        view = await stream_the_answer(h)
        assert view.query_children(FoldedSegment)
        session_id = h.app.runner.session_id
        await h.pilot.resize_terminal(100, 560)  # same width: everything comes into view
        # Pictures stand in for the segments while the view follows the stream; the mouse
        # over one (to select text, to click a link) brings its real widgets back.
        for folded in list(view.query_children(FoldedSegment)):
            await h.pilot.hover(folded)
            await h.pilot.pause(0.05)
        await h.until(lambda: not view.query_children(FoldedSegment), 5, "every segment to unfold")
        await h.until(lambda: "Section 0" in h.text(), 5, "the top of the answer")
        await h.pilot.pause(0.2)
        unfolded = answer_cells(h)
    assert unfolded == await resumed_answer_cells(
        server, workspace, dcode_home, (100, 560), session_id
    )


async def test_pictures_give_way_to_a_new_theme_and_a_new_width(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    answer = long_answer(40)
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply(answer, chunk_size=40, chunk_delay=0.02),
        size=(100, 150),
    ) as h:
        view = await stream_the_answer(h)

        def pictured() -> list[FoldedSegment]:
            return [
                folded
                for folded in view.query_children(FoldedSegment)
                if folded.picture is not None
            ]

        def on_screen() -> list[FoldedSegment]:
            viewport = h.app.transcript.region
            return [
                folded
                for folded in view.query_children(FoldedSegment)
                if folded.region.overlaps(viewport)
            ]

        assert any(folded.picture is not None for folded in on_screen())
        before = h.text()
        h.app.theme = "textual-light"
        # No picture of the old colours stays: the segments in view are rebuilt at once.
        await h.until(
            lambda: not pictured() and not on_screen(), 5, "the segments in view to unfold"
        )
        # The same words in the same places, in the new colours.
        await h.until(lambda: h.text() == before, 5, "the rebuilt segments to settle")
        assert view.source == answer

    async with running_app(
        server,
        workspace,
        dcode_home,
        reply(answer, chunk_size=40, chunk_delay=0.005),
        size=(100, 60),
    ) as h:
        view = await stream_the_answer(h)
        assert [
            folded for folded in view.query_children(FoldedSegment) if folded.picture is not None
        ]
        await h.pilot.resize_terminal(80, 60)  # every height changes with the width
        await h.until(lambda: not view.query_children(FoldedSegment), 5, "every segment to unfold")
        await h.pilot.pause(0.2)
        assert "The last line of the answer." in h.text() and view.source == answer


async def test_the_answer_is_whole_on_screen_when_the_model_is_done(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """The model's last piece arrives right behind the rest: the answer's end is painted
    before the step's remaining events are handled (the screen's own paced writes would
    show it up to a beat later)."""
    from dcode.agent.events import ModelStreamEnded, TextDelta

    answer = long_answer(12)
    async with running_app(server, workspace, dcode_home, size=(100, 40)) as h:
        app = h.app
        await app.transcript.add_user("explain it all")
        for start in range(0, len(answer) - 40, 400):
            await app.session._apply(
                TextDelta(text=answer[start : min(start + 400, len(answer) - 40)])
            )
            await h.pilot.pause(0.07)
        await app.session._apply(
            TextDelta(text=answer[-40:])
        )  # the last words, and at once the end
        await app.session._apply(ModelStreamEnded())
        assert "The last line of the answer." in h.text()
