"""The transcript's message widgets: user prompts, reasoning, notices, shell output.

Answers, which stream, are in ``answer``.

Each widget is built from its entry and reads it again on ``sync()``; none keeps state that
the entry does not have.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from dcode.agent.attached_files import ATTACHMENT_MARK
from dcode.terminal_text import safe_text
from dcode.tui.transcript.entries import (
    AssistantEntry,
    NoticeEntry,
    NoticeLevel,
    ShellEntry,
    UserEntry,
)

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
        super().__init__(self._content(entry), markup=False)
        self.entry = entry

    @staticmethod
    def _content(entry: UserEntry) -> Content:
        text = Content(safe_text(entry.text))
        if not entry.videos and not entry.files:
            return text
        from dcode.tui.transcript.video_view import video_line

        lines = [
            Content.assemble(
                (f"{ATTACHMENT_MARK} ", "$text-accent"), (safe_text(line), "$text-muted")
            )
            for line in entry.files
        ]
        lines += [
            Content.assemble(("▸ ", "$text-accent"), (video_line(seen), "$text-muted"))
            for seen in entry.videos
        ]
        return Content("\n").join([text, *lines])

    def on_mount(self) -> None:
        if self.entry.videos:
            from dcode.tui.transcript.video_view import measure

            for seen in self.entry.videos:
                measure(self, seen, self.sync)

    def sync(self) -> None:
        self.update(self._content(self.entry))


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
            self.update(
                Content.assemble(("▸ Thought", "bold"), f" ({words} words, click to expand)")
            )

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.expanded = not self.expanded
        self.sync()


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

    ICONS: ClassVar[dict[NoticeLevel, str]] = {
        NoticeLevel.INFO: "·",
        NoticeLevel.WARNING: "!",
        NoticeLevel.ERROR: "✗",
    }

    class OpenPath(Message):
        """Asks the app to show the file a notice names."""

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    def __init__(self, entry: NoticeEntry) -> None:
        text = Content(f"{self.ICONS[entry.level]} {safe_text(entry.text)}")
        if entry.path:
            text = Content.assemble(
                text,
                " · ",
                (safe_text(entry.path), "underline"),
                (" (click to open)", "$text-muted"),
            )
        super().__init__(text, classes=f"-{entry.level.value}")
        self.entry = entry

    def on_click(self, event: events.Click) -> None:
        if self.entry.path:
            event.stop()
            self.post_message(self.OpenPath(self.entry.path))


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
            (f" {safe_text(entry.command)}", "bold"),
            ("  (not sent to the model)" if entry.private else "", "$text-muted"),
        )
        if entry.running:
            rows = safe_text(entry.tail).split("\n") if entry.tail else []
            tail = Content("").join(
                Content.assemble(("\n  │ ", "$text-muted"), (row, "$text-muted")) for row in rows
            )
            self.update(
                Content.assemble(head, tail, ("\n  running… (esc stops it)", "$text-muted"))
            )
            return
        lines = safe_text(entry.output).rstrip("\n").splitlines()
        shown = lines if self.expanded else lines[:SHELL_PREVIEW]
        body = "\n".join("  " + line for line in shown) or "  (no output)"
        extra = len(lines) - len(shown)
        parts = [head, Content("\n" + body)]
        if extra:
            parts.append(
                Content.styled(f"\n  … {extra} more lines (click to expand)", "$text-muted")
            )
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

    class Pressed(Message):
        """Asks the transcript for the previous batch."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Pressed())

    def set_count(self, hidden: int) -> None:
        self.set_class(hidden > 0, "-visible")
        if hidden:
            self.update(Content(f"↑ {hidden} earlier messages (scroll up or click to load)"))
