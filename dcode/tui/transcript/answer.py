"""A streamed answer: Markdown written as it arrives, in segments, each folded into a picture
of itself once finished.

The widget is built from its ``AssistantEntry`` and writes what the entry's text has gained,
paced (``WRITE_INTERVAL``) so that the screen keeps up with thousands of characters a second.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from textual.app import App, ComposeResult
from textual.await_complete import AwaitComplete
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock, MarkdownStream

from dcode.terminal_text import is_safe, safe_text
from dcode.tui.transcript.blocks import ReasoningView
from dcode.tui.transcript.entries import AssistantEntry
from dcode.tui.transcript.list_block import BulletListBlock, OrderedListBlock
from dcode.tui.transcript.plain_lines import PlainLines
from dcode.tui.transcript.segments import FOLD_SCREENS, FoldedSegment, segment_cut, snapshot
from dcode.tui.transcript.table_block import TableBlock

WEB_SCHEMES = ("http", "https")
WRITE_INTERVAL = 0.06  # seconds between writes of a streaming answer
FOLD_DELAY = 0.1  # seconds from a segment's end to its folding
INTERRUPTED_MARK = "⏹ interrupted · the partial answer was kept"  # the thread keeps it too


class AnswerDocument(Markdown, PlainLines):
    """One segment of an answer. After each append the answer's end is marked again, so the
    last block never carries a bottom margin and finishing the answer moves nothing.

    ``given`` is the Markdown the document was handed, built or not (``source`` stays "" until
    a freshly mounted document has been parsed). Tables and lists of text are drawn by one
    block each (``table_block``, ``list_block``).
    """

    BLOCKS = {  # noqa: RUF012 - Textual's Markdown declares it as a plain class attribute
        **Markdown.BLOCKS,
        "table_open": TableBlock,
        "bullet_list_open": BulletListBlock,
        "ordered_list_open": OrderedListBlock,
    }

    def __init__(self, markdown: str | None = None, *, classes: str | None = None) -> None:
        super().__init__(
            markdown, classes=classes, open_links=False
        )  # the answer decides (``follow_link``)
        self.given = markdown or ""
        # The screen's layout count when the document was last complete (None: still growing,
        # or built from a whole text that no layout has measured yet).
        self.settled_at_frame: int | None = None
        self._appending: list[AwaitComplete] = []

    def append(self, markdown: str) -> AwaitComplete:
        self.given += markdown
        appended = super().append(markdown)

        async def then() -> None:
            await appended
            if isinstance(self.parent, AssistantMessage):
                self.parent.mark_end()

        self._appending = [
            *(pending for pending in self._appending if not pending.is_done),
            AwaitComplete(then()),
        ]
        return self._appending[-1]

    async def settled(self) -> None:
        """Wait until everything appended so far is in the document. A stopped
        ``MarkdownStream`` does not wait for the append it has in flight."""
        while self._appending:
            await self._appending.pop(0)


class AssistantMessage(Vertical, PlainLines):
    """An answer, streamed through Textual's ``MarkdownStream`` while it arrives.

    A long streamed answer is written into several Markdown segments, and the finished ones
    are folded into pictures of themselves (see ``segments``), so that each frame lays out
    and redraws only the segment being written, however long the answer grows.
    """

    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        margin: 1 0 0 0;
    }
    AssistantMessage > Markdown {
        padding: 0 1 0 2;
        margin: 0;
    }
    AssistantMessage .interrupted {
        color: $text-warning;
        padding: 0 2;
    }
    """

    def __init__(self, entry: AssistantEntry) -> None:
        super().__init__()
        self.entry = entry
        self._stream: MarkdownStream | None = None
        self._writing = asyncio.Lock()
        self._end_block: MarkdownBlock | None = None
        self._streamed = ""
        self._segment = ""
        self._flush_scheduled = False
        self._folding = False
        self._fold_due: float | None = None  # when the finished segments may fold
        self._replaced: set[Widget] = set()  # segments being swapped for their replacement
        self._last_write = 0.0

    def compose(self) -> ComposeResult:
        if self.entry.reasoning:
            yield ReasoningView(self.entry)
        yield AnswerDocument(None if self.entry.streaming else self.entry.text)
        if self.entry.interrupted:
            yield Static(Content(INTERRUPTED_MARK), classes="interrupted")

    @property
    def markdown(self) -> Markdown:
        """The last (or only) Markdown segment."""
        return self.query_children(Markdown).last()

    @property
    def source(self) -> str:
        """The Markdown shown, folded segments included."""
        return "".join(
            child.given if isinstance(child, AnswerDocument) else child.source
            for child in self._segments()
        )

    def _segments(self) -> list[AnswerDocument | FoldedSegment]:
        """The segments, in order; one being swapped (folded or unfolded) counts once."""
        return [
            child
            for child in self.children
            if isinstance(child, (AnswerDocument, FoldedSegment)) and child not in self._replaced
        ]

    async def on_mount(self) -> None:
        if self.entry.streaming:
            self._stream = Markdown.get_stream(self.markdown)
            await self.stream_pending()

    def text_arrived(self) -> None:
        """New text in the entry: write it at the next beat, not on every delta.

        Each write re-lays out the screen, which costs tens of milliseconds with a long answer
        in view. Written delta by delta, thousands of characters a second would keep the event
        loop saturated and the screen behind the stream. So text goes out at most every
        ``WRITE_INTERVAL`` (the first text at once), and the end of the model's stream
        (``write_all``) goes out without waiting for the beat.
        """
        if self._flush_scheduled:
            return
        self._flush_scheduled = True
        wait = self._last_write + WRITE_INTERVAL - time.monotonic()
        if wait <= 0.001 or not self._streamed:
            self.call_later(self._flush)  # a zero-delay Textual timer never fires
        else:
            self.set_timer(wait, self._flush)

    async def _flush(self) -> None:
        self._flush_scheduled = False
        await self.stream_pending()

    async def write_all(self) -> None:
        """The model has sent everything: write it now, into the current segment, and end
        the stream, so that the answer's end can be painted in one frame (the transcript's
        ``show_all_text`` asks for that frame).

        Repaints wait meanwhile. A frame could otherwise start while a write is still in
        flight inside the stream (its blocks parsed, not yet mounted), and the last words
        would wait for that frame and one more.
        """
        with self.app.batch_update():
            async with self._writing:
                await self._stream_pending(final=True)
                await self._end_stream()

    async def _end_stream(self) -> None:
        """Stop the stream, and return once everything handed to it is in the document."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.stop()
            document = stream.markdown_widget
            if isinstance(document, AnswerDocument):
                await document.settled()

    async def stream_pending(self) -> None:
        """Hand the stream whatever the entry's text has gained since the last write.

        Serialized: a timer's flush and the end of the message may both get here, and each
        await inside (a write, a new segment) would let the other interleave its pieces.
        Once the stream has ended nothing folds here: the answer's last frame comes first,
        and ``finish`` folds after it.
        """
        async with self._writing:
            due = self._fold_due
            if self._stream is not None and due is not None and time.monotonic() >= due:
                with self.app.batch_update():  # the fold and the write: one frame
                    self._fold_due = None
                    await self._fold_finished()
                    await self._stream_pending()
            else:
                await self._stream_pending()

    async def _stream_pending(self, final: bool = False) -> None:
        pending = self.entry.text[len(self._streamed) :]
        while pending and self._stream is not None:
            # The last write never starts a segment: a new widget for the answer's last few
            # words would cost a frame exactly when the answer should be complete on screen.
            cut = None if final else segment_cut(self._segment, pending)
            piece = pending if cut is None else pending[:cut]
            if piece:
                self._streamed += piece
                self._segment += piece
                self._last_write = time.monotonic()
                await self._stream.write(piece)
            if cut is None:
                return
            pending = pending[cut:]
            finished = self.markdown
            await self._end_stream()  # the finished segment is whole before the next begins
            if isinstance(finished, AnswerDocument):
                finished.settled_at_frame = self._frames()
            segment = AnswerDocument()
            await self.mount(segment)
            self._stream = Markdown.get_stream(segment)
            self._segment = ""
            # Once the finished segment has been laid out and drawn, a later write folds it
            # into its picture, in that write's frame (see ``stream_pending``).
            self._fold_due = time.monotonic() + FOLD_DELAY

    @property
    def folds_pending(self) -> bool:
        """Whether a finished segment is still to be folded (or being folded)."""
        return self._fold_due is not None or self._folding

    async def _fold_after_the_end(self, tries: int = 10) -> None:
        self._fold_due = None
        await self._fold_finished()
        if self._fold_due is not None and tries > 1:  # not laid out yet (a busy machine)
            self.set_timer(FOLD_DELAY, lambda: self._fold_after_the_end(tries - 1))

    async def _fold_finished(self) -> None:
        """Fold the finished segments into pictures of themselves, while the transcript
        follows the stream (someone reading further up keeps it all). A segment whose picture
        cannot be taken folds only when more than ``FOLD_SCREENS`` screens above the bottom."""
        if self._folding:
            return  # one fold at a time: each awaits its swaps, and they would fold twice
        self._folding = True
        try:
            await self._fold_segments()
        finally:
            self._folding = False

    async def _fold_segments(self) -> None:
        transcript = self.parent
        if not isinstance(transcript, Widget) or not getattr(transcript, "following", False):
            return
        if not self.screen.is_current:
            return  # under a dialog nothing is laid out, so the heights may be stale
        out_of_sight = FOLD_SCREENS * max(transcript.size.height, 1)
        pointed = self.app.mouse_over
        below = 0
        live = self.markdown
        for child in reversed(list(self.children)):
            height = child.outer_size.height
            if (
                not isinstance(child, AnswerDocument)
                or child is live
                or child.has_class("-unfolding")
            ):
                pass
            elif not self._laid_out_whole(child):
                self._fold_due = time.monotonic() + FOLD_DELAY  # not yet: try again later
            elif (
                child.parent is self
                and height > 0
                and not (pointed is not None and (pointed is child or child in pointed.ancestors))
            ):
                picture = snapshot(child)
                if picture is not None or below > out_of_sight:
                    blocks = child.query_children(MarkdownBlock)
                    bottom = blocks.last().styles.margin.bottom if blocks else 0
                    folded = FoldedSegment(
                        child.given, height, child.outer_size.width, bottom, picture
                    )
                    await self._swap(child, folded)
            below += height

    def _frames(self) -> int:
        return int(getattr(self.parent, "frames", 0))

    def _laid_out_whole(self, document: AnswerDocument) -> bool:
        """Whether the screen has laid ``document`` out since its last words, so that its
        height, and the picture that would be taken of it, are whole: a layout has happened
        since, and the height it gave is the one the document's content asks for (a
        scroll-only refresh also counts as a layout, and measures nothing)."""
        if document.settled_at_frame is None or self._frames() <= document.settled_at_frame:
            return False
        # The arrangement the compositor uses (cached once laid out) fills the content exactly.
        return document.arrange(document.size).total_region.height == document.size.height

    async def on_folded_segment_unfold(self, message: FoldedSegment.Unfold) -> None:
        """Put a folded segment back, at its old height until its blocks are built."""
        message.stop()
        folded = message.folded
        if folded.parent is not self:
            return
        segment = AnswerDocument(folded.source, classes="-unfolding")
        if folded.size.width == folded.folded_width:
            segment.styles.height = folded.outer_size.height
        await self._swap(folded, segment)

    async def _swap(self, old: Widget, new: Widget) -> None:
        """Put ``new`` in the place of ``old`` in one frame."""
        self._replaced.add(old)
        try:
            with self.app.batch_update():
                await self.mount(new, before=old)
                await old.remove()
        finally:
            self._replaced.discard(old)

    async def sync_reasoning(self) -> None:
        views = self.query_children(ReasoningView)
        if views:
            views.first().sync()
        elif self.entry.reasoning:
            await self.mount(ReasoningView(self.entry), before=0)

    async def finish(self) -> None:
        """Stop streaming; make sure what is shown is exactly the entry's text."""
        if not self.is_mounted:  # its mount was cancelled (dcode is quitting): nothing is shown
            return
        async with self._writing:
            await self._stream_pending(final=True)
            await self._end_stream()
        if self.source != self.entry.text:
            shown = self._segments()
            with self.app.batch_update():
                await self.mount(AnswerDocument(self.entry.text), before=shown[0])
                await self.remove_children(shown)
        await self.sync_reasoning()
        if self._fold_due is not None:  # after the answer's last frame, not in it
            self.set_timer(FOLD_DELAY, self._fold_after_the_end)
        if self.entry.interrupted and not self.query_children(".interrupted"):
            await self.mount(Static(Content(INTERRUPTED_MARK), classes="interrupted"))
        self.mark_end()

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        follow_link(self.app, event.href)

    def on_markdown_table_of_contents_updated(self, event: Markdown.TableOfContentsUpdated) -> None:
        # Posted when a document has been (re)built: a finished answer's blocks exist now.
        event.stop()
        document = event.markdown
        if document.has_class("-unfolding"):
            document.remove_class("-unfolding")
            document.styles.height = None  # back to auto, which comes out the same
            if isinstance(document, AnswerDocument):
                document.settled_at_frame = self._frames()
        self.mark_end()

    def mark_end(self) -> None:
        """Drop the bottom margin of the answer's last block, so that no blank line trails it.

        An inline margin on that one block, moved as blocks arrive. Not a ``:last-child``
        rule: order pseudo-classes make Textual restyle every sibling block whenever a block
        is mounted. Not a class either: changing a class restyles the block and everything in
        it (every cell of a table), on nearly every write.
        """
        segments = self.query_children(Markdown)
        blocks = segments.last().query_children(MarkdownBlock) if segments else None
        last = blocks.last() if blocks else None
        if last is not self._end_block:
            previous, self._end_block = self._end_block, last
            if previous is not None:
                _set_bottom_margin(previous, _natural_margin(previous, "bottom"))
            if last is not None:
                _natural_margin(last, "bottom")  # remembered before it is dropped
                _set_bottom_margin(last, 0)
        self._join_segments()  # also when a segment above was rebuilt (unfolded)

    def _join_segments(self) -> None:
        """Margins between blocks collapse inside one document but not across two: give each
        segment's first block only the top margin the collapse would have left, so a streamed
        answer looks exactly like the same Markdown rendered at once."""
        above: int | None = None  # the bottom margin of the block just above, if known
        for child in self.children:
            if isinstance(child, FoldedSegment):
                above = child.bottom_margin
                continue
            if not isinstance(child, Markdown):
                above = None
                continue
            blocks = child.query_children(MarkdownBlock)
            if not blocks:
                continue
            first = blocks.first()
            natural = _natural_margin(first, "top")
            top = natural if above is None else max(natural - above, 0)
            margin = first.styles.margin
            if margin.top != top:
                first.styles.margin = (top, margin.right, margin.bottom, margin.left)
            above = blocks.last().styles.margin.bottom


def follow_link(app: App[object], href: str) -> None:
    """A click on a link in an answer. The link's text is the model's and may name another
    address, so the address opened is always said; only a web address opens (a ``file:``,
    ``javascript:`` or any other is shown, not followed)."""
    shown = safe_text(href)
    if _web_address(href):
        app.open_url(href)
        app.notify(f"opening {shown}", markup=False)
    else:
        app.notify(
            f"not opened: {shown} (only http and https links open from an answer)",
            severity="warning",
            markup=False,
        )


def _web_address(href: str) -> bool:
    try:
        scheme = urlsplit(href).scheme
    except ValueError:  # not an address at all
        return False
    return scheme.lower() in WEB_SCHEMES and is_safe(href)


def _natural_margin(block: Widget, side: str) -> int:
    """The margin the stylesheet gives ``block`` on ``side`` ("top" or "bottom"), remembered
    the first time it is asked, before any inline margin replaces it."""
    remembered: dict[str, int] = block.__dict__.setdefault("_dcode_natural_margin", {})
    if side not in remembered:
        remembered[side] = getattr(block.styles.margin, side)
    return remembered[side]


def _set_bottom_margin(block: Widget, bottom: int) -> None:
    margin = block.styles.margin
    if margin.bottom != bottom:
        block.styles.margin = (margin.top, margin.right, bottom, margin.left)
