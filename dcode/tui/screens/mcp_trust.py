"""Asked when the project's ``.mcp.json`` names servers the user has not approved (in this
content): each server with the command it would run or the URL it would reach.

"Start these servers" (Ctrl+T) records the approval in ``$DCODE_HOME`` for exactly this content
and starts them; "Not now" (Esc) leaves them out this session and asks next time. Like the
project's trust dialog it never takes typed text away (``KeepsTyping``).
"""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from dcode.mcp.config import ConfigFile, ServerConfig
from dcode.trust import TrustState
from dcode.tui.screens.keeps_typing import KeepsTyping

_TARGET_CHARS = 200


def server_line(server: ServerConfig) -> Content:
    target = server.target
    if len(target) > _TARGET_CHARS:
        target = target[: _TARGET_CHARS - 1] + "…"
    kind = "runs" if server.transport.value == "stdio" else f"connects ({server.transport.value}) to"
    return Content.assemble(("  " + server.name, "bold"), f" {kind} ", (target, "$accent"))


class McpTrustScreen(KeepsTyping, ModalScreen[bool]):
    """Dismisses True for "Start these servers", False for "Not now"."""

    AUTO_FOCUS = "#mcp-trust-body"

    DEFAULT_CSS = """
    McpTrustScreen {
        align: center middle;
    }
    McpTrustScreen > #mcp-trust-dialog {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        border: round $warning;
        background: $surface;
        padding: 0 2;
    }
    #mcp-trust-title {
        text-style: bold;
        color: $warning;
        margin: 1 0 0 0;
    }
    #mcp-trust-body {
        height: auto;
        max-height: 100%;
        margin: 1 0 0 0;
    }
    #mcp-trust-servers {
        margin: 1 0;
    }
    #mcp-trust-buttons {
        dock: bottom;
        height: auto;
        margin: 1 0;
    }
    #mcp-trust-buttons > Button {
        margin: 0 1 0 0;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "start", "Start these servers"),
        Binding("escape", "not_now", "Not now"),
    ]

    def __init__(self, file: ConfigFile, state: TrustState) -> None:
        super().__init__()
        self.file = file
        self.state = state

    def compose(self) -> ComposeResult:
        changed = self.state is TrustState.CHANGED
        with Vertical(id="mcp-trust-dialog"):
            yield Label(
                "This project's MCP servers changed since you approved them" if changed else "Start this project's MCP servers?",
                id="mcp-trust-title",
            )
            with VerticalScroll(id="mcp-trust-body"):
                yield Static(
                    Content.assemble(
                        (str(self.file.path), "bold"),
                        " names programs to run and servers to reach, whose tools the model could then call:",
                    ),
                    id="mcp-trust-intro",
                )
                yield Static(Content("\n").join(server_line(s) for s in self.file.servers), id="mcp-trust-servers")
                yield Static(
                    "Start them only if you know where the repository comes from. dcode remembers the choice"
                    " and asks again if the file changes.",
                    id="mcp-trust-note",
                )
            with Horizontal(id="mcp-trust-buttons"):
                yield Button("Start these servers  ctrl+t", id="mcp-trust-yes", variant="warning")
                yield Button("Not now  esc", id="mcp-trust-no")

    @on(Button.Pressed, "#mcp-trust-yes")
    def action_start(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#mcp-trust-no")
    def action_not_now(self) -> None:
        self.dismiss(False)

    def on_key(self, event: events.Key) -> None:
        self.keep_typed(event)
