"""The transcript's message widgets: user prompts, streamed answers, reasoning, notices, shell.

Each widget is built from its entry and reads it again on ``sync()``; none keeps state that
the entry does not have.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets._markdown import MarkdownStream

from dcode.tui.transcript.entries import AssistantEntry, NoticeEntry, NoticeLevel, ShellEntry, UserEntry

REASONING_TAIL = 3
SHELL_PREVIEW = 6


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $primary;
        background: $boost;
        color: $text;
    }
    """

    def __init__(self, entry: UserEntry) -> None:
        super().__init__(Content(entry.text), markup=False)
        self.entry = entry


class ReasoningView(Static):
    """Reasoning, dimmed; its tail shows while it streams, and a click folds it open or shut."""

    DEFAULT_CSS = """
    ReasoningView {
        color: $text-muted;
        text-style: italic;
        padding: 0 2;
        margin: 0 0 1 0;
    }
    ReasoningView:hover { color: $text; }
    """

    def __init__(self, entry: AssistantEntry) -> None:
        super().__init__()
        self.entry = entry
        self.expanded = False

    def on_mount(self) -> None:
        self.sync()

    def sync(self) -> None:
        text = self.entry.reasoning.strip()
        lines = text.splitlines() or [""]
        if self.expanded:
            self.update(Content.assemble(("▾ Thinking\n", "bold"), text))
        elif self.entry.streaming:
            tail = "\n".join(lines[-REASONING_TAIL:])
            self.update(Content.assemble(("▾ Thinking…\n", "bold"), tail))
        else:
            words = len(text.split())
            self.update(Content.assemble(("▸ Thought", "bold"), f" ({words} words, click to expand)"))

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.expanded = not self.expanded
        self.sync()


class AssistantMessage(Vertical):
    """An answer, streamed through Textual's ``MarkdownStream`` while it arrives."""

    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        margin: 1 0 0 0;
    }
    AssistantMessage > Markdown {
        padding: 0 1 0 2;
        margin: 0;
    }
    AssistantMessage > Markdown > MarkdownBlock:last-child { margin-bottom: 0; }
    AssistantMessage .interrupted {
        color: $text-warning;
        padding: 0 2;
    }
    """

    def __init__(self, entry: AssistantEntry) -> None:
        super().__init__()
        self.entry = entry
        self._stream: MarkdownStream | None = None
        self._streamed = ""

    def compose(self) -> ComposeResult:
        if self.entry.reasoning:
            yield ReasoningView(self.entry)
        yield Markdown(None if self.entry.streaming else self.entry.text)
        if self.entry.interrupted:
            yield Static(Content("⏹ interrupted"), classes="interrupted")

    @property
    def markdown(self) -> Markdown:
        return self.query_one(Markdown)

    async def on_mount(self) -> None:
        if self.entry.streaming:
            self._stream = Markdown.get_stream(self.markdown)
            if self.entry.text:
                await self.write("")

    async def write(self, _fragment: str) -> None:
        """Stream what the entry has gained since the last write."""
        pending = self.entry.text[len(self._streamed):]
        if not pending or self._stream is None:
            return
        self._streamed = self.entry.text
        await self._stream.write(pending)

    async def sync_reasoning(self) -> None:
        views = self.query(ReasoningView)
        if views:
            views.first().sync()
        elif self.entry.reasoning:
            await self.mount(ReasoningView(self.entry), before=0)

    async def finish(self) -> None:
        """Stop streaming; make sure the final text is exactly the entry's text."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await self.write_remaining(stream)
            await stream.stop()
        if self.markdown.source != self.entry.text:
            await self.markdown.update(self.entry.text)
        await self.sync_reasoning()
        if self.entry.interrupted and not self.query(".interrupted"):
            await self.mount(Static(Content("⏹ interrupted"), classes="interrupted"))

    async def write_remaining(self, stream: MarkdownStream) -> None:
        pending = self.entry.text[len(self._streamed):]
        if pending:
            self._streamed = self.entry.text
            await stream.write(pending)


class NoticeMessage(Static):
    DEFAULT_CSS = """
    NoticeMessage {
        margin: 1 0 0 0;
        padding: 0 2;
        color: $text-muted;
    }
    NoticeMessage.-warning { color: $text-warning; }
    NoticeMessage.-error { color: $text-error; }
    """

    ICONS = {NoticeLevel.INFO: "·", NoticeLevel.WARNING: "!", NoticeLevel.ERROR: "✗"}

    def __init__(self, entry: NoticeEntry) -> None:
        super().__init__(Content(f"{self.ICONS[entry.level]} {entry.text}"), classes=f"-{entry.level.value}")
        self.entry = entry


class ShellOutput(Static):
    """A ``!cmd``: the command, then its output; long output folds to its head until clicked."""

    DEFAULT_CSS = """
    ShellOutput {
        margin: 1 0 0 0;
        padding: 0 2;
        color: $text;
    }
    ShellOutput.-failed { color: $text-error; }
    """

    def __init__(self, entry: ShellEntry) -> None:
        super().__init__()
        self.entry = entry
        self.expanded = False

    def on_mount(self) -> None:
        self.sync()

    def sync(self) -> None:
        entry = self.entry
        head = Content.assemble(
            ("!!" if entry.private else "!", "bold $text-accent"),
            (f" {entry.command}", "bold"),
            ("  (not sent to the model)" if entry.private else "", "$text-muted"),
        )
        if entry.running:
            self.update(Content.assemble(head, ("\n  running…", "$text-muted")))
            return
        lines = entry.output.rstrip("\n").splitlines()
        shown = lines if self.expanded else lines[:SHELL_PREVIEW]
        body = "\n".join("  " + line for line in shown) or "  (no output)"
        extra = len(lines) - len(shown)
        parts = [head, Content("\n" + body)]
        if extra:
            parts.append(Content.styled(f"\n  … {extra} more lines (click to expand)", "$text-muted"))
        if entry.exit_code not in (0, None):
            parts.append(Content.styled(f"\n  exit code {entry.exit_code}", "$text-error"))
        self.set_class(entry.exit_code not in (0, None), "-failed")
        self.update(Content.assemble(*parts))

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.expanded = not self.expanded
        self.sync()


class OlderMarker(Static):
    """Stands in for the entries above the window; scrolling up to it mounts them."""

    DEFAULT_CSS = """
    OlderMarker {
        color: $text-muted;
        text-align: center;
        display: none;
    }
    OlderMarker.-visible { display: block; }
    """

    def set_count(self, hidden: int) -> None:
        self.set_class(hidden > 0, "-visible")
        if hidden:
            self.update(Content(f"↑ {hidden} earlier messages (scroll up to load)"))
