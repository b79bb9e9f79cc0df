"""A streamed answer: Markdown written as it arrives, in segments, folded when far out of sight.

The widget is built from its ``AssistantEntry`` and writes what the entry's text has gained,
paced (``WRITE_INTERVAL``) so that the screen keeps up with thousands of characters a second.
"""

from __future__ import annotations

import asyncio
import time

from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets._markdown import MarkdownBlock, MarkdownStream

from dcode.tui.transcript.blocks import ReasoningView
from dcode.tui.transcript.entries import AssistantEntry
from dcode.tui.transcript.segments import FOLD_SCREENS, FoldedSegment, segment_cut

WRITE_INTERVAL = 0.06  # seconds between writes of a streaming answer


class AnswerDocument(Markdown):
    """One segment of an answer. After each append the answer's end is marked again, so the
    last block never carries a bottom margin and finishing the answer moves nothing.

    ``given`` is the Markdown the document was handed, built or not (``source`` stays "" until
    a freshly mounted document has been parsed).
    """

    def __init__(self, markdown: str | None = None, *, classes: str | None = None) -> None:
        super().__init__(markdown, classes=classes)
        self.given = markdown or ""

    def append(self, markdown: str) -> AwaitComplete:
        self.given += markdown
        appended = super().append(markdown)

        async def then() -> None:
            await appended
            if isinstance(self.parent, AssistantMessage):
                self.parent.mark_end()

        return AwaitComplete(then())


class AssistantMessage(Vertical):
    """An answer, streamed through Textual's ``MarkdownStream`` while it arrives.

    A long streamed answer is written into several Markdown segments, and those far above
    the one being written are folded (see ``segments``), so that each frame lays out a
    bounded number of widgets however long the answer grows.
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
    AssistantMessage MarkdownBlock.-answer-end { margin-bottom: 0; }
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
        self._last_write = 0.0

    def compose(self) -> ComposeResult:
        if self.entry.reasoning:
            yield ReasoningView(self.entry)
        yield AnswerDocument(None if self.entry.streaming else self.entry.text)
        if self.entry.interrupted:
            yield Static(Content("⏹ interrupted"), classes="interrupted")

    @property
    def markdown(self) -> Markdown:
        """The last (or only) Markdown segment."""
        return self.query_children(Markdown).last()

    @property
    def source(self) -> str:
        """The Markdown shown, folded segments included."""
        return "".join(child.given if isinstance(child, AnswerDocument) else child.source for child in self._segments())

    def _segments(self) -> list[AnswerDocument | FoldedSegment]:
        return [child for child in self.children if isinstance(child, (AnswerDocument, FoldedSegment))]

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
        """The model has sent everything: write it now, into the current segment."""
        async with self._writing:
            await self._stream_pending(final=True)

    async def stream_pending(self) -> None:
        """Hand the stream whatever the entry's text has gained since the last write.

        Serialized: a timer's flush and the end of the message may both get here, and each
        await inside (a write, a new segment) would let the other interleave its pieces.
        """
        async with self._writing:
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
            await self._stream.stop()
            segment = AnswerDocument()
            await self.mount(segment)
            self._stream = Markdown.get_stream(segment)
            self._segment = ""
            await self._fold_out_of_sight()

    async def _fold_out_of_sight(self) -> None:
        """Fold the finished segments more than ``FOLD_SCREENS`` screens above the bottom,
        while the transcript follows the stream (someone reading further up keeps it all)."""
        transcript = self.parent
        if not isinstance(transcript, Widget) or not getattr(transcript, "following", False):
            return
        if not self.screen.is_current:
            return  # under a dialog nothing is laid out, so the heights may be stale
        out_of_sight = FOLD_SCREENS * max(transcript.size.height, 1)
        below = 0
        live = self.markdown
        for child in reversed(list(self.children)):
            height = child.outer_size.height
            if isinstance(child, AnswerDocument) and child is not live and below > out_of_sight and height > 0:
                blocks = child.query_children(MarkdownBlock)
                bottom = blocks.last().styles.margin.bottom if blocks else 0
                folded = FoldedSegment(child.given, height, child.outer_size.width, bottom)
                with self.app.batch_update():
                    await self.mount(folded, before=child)
                    await child.remove()
            below += height

    async def on_folded_segment_unfold(self, message: FoldedSegment.Unfold) -> None:
        """Put a folded segment back, at its old height until its blocks are built."""
        message.stop()
        folded = message.folded
        if folded.parent is not self:
            return
        segment = AnswerDocument(folded.source, classes="-unfolding")
        if folded.size.width == folded.folded_width:
            segment.styles.height = folded.outer_size.height
        with self.app.batch_update():
            await self.mount(segment, before=folded)
            await folded.remove()

    async def sync_reasoning(self) -> None:
        views = self.query_children(ReasoningView)
        if views:
            views.first().sync()
        elif self.entry.reasoning:
            await self.mount(ReasoningView(self.entry), before=0)

    async def finish(self) -> None:
        """Stop streaming; make sure what is shown is exactly the entry's text."""
        async with self._writing:
            await self._stream_pending(final=True)
            stream, self._stream = self._stream, None
            if stream is not None:
                await stream.stop()
        if self.source != self.entry.text:
            shown = self._segments()
            with self.app.batch_update():
                await self.mount(AnswerDocument(self.entry.text), before=shown[0])
                await self.remove_children(shown)
        await self.sync_reasoning()
        if self.entry.interrupted and not self.query_children(".interrupted"):
            await self.mount(Static(Content("⏹ interrupted"), classes="interrupted"))
        self.mark_end()

    def on_markdown_table_of_contents_updated(self, event: Markdown.TableOfContentsUpdated) -> None:
        # Posted when a document has been (re)built: a finished answer's blocks exist now.
        event.stop()
        document = event.markdown
        if document.has_class("-unfolding"):
            document.remove_class("-unfolding")
            document.styles.height = None  # back to auto, which comes out the same
        self.mark_end()

    def mark_end(self) -> None:
        """Drop the bottom margin of the answer's last block, so that no blank line trails it.

        A class, moved as blocks arrive, rather than a ``:last-child`` rule: order
        pseudo-classes make Textual restyle every sibling block whenever a block is mounted,
        which, while an answer streams, grows with the answer.
        """
        segments = self.query_children(Markdown)
        blocks = segments.last().query_children(MarkdownBlock) if segments else None
        last = blocks.last() if blocks else None
        if last is not self._end_block:
            if self._end_block is not None:
                self._end_block.remove_class("-answer-end")
            self._end_block = last
            if last is not None:
                last.add_class("-answer-end")
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
            natural = getattr(first, "_natural_top", None)
            if natural is None:
                natural = first._natural_top = first.styles.margin.top  # type: ignore[attr-defined]
            top = natural if above is None else max(natural - above, 0)
            if first.styles.margin.top != top:
                first.styles.margin = (top, *first.styles.margin[1:])
            above = blocks.last().styles.margin.bottom
