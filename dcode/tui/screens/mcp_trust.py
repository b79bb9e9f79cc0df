"""Asked when the project's ``.mcp.json`` names servers the user has not approved (in this
content): each server with the command it would run or the URL it would reach, every variable
it would read from the environment, the servers that will not start (a variable the file may
not read) and the user's own servers it replaces.

"Start these servers" (Ctrl+T) records the approval in ``$DCODE_HOME`` for exactly this content
and starts them; "Not now" (Esc) leaves them out this session and asks next time. Like the
project's trust dialog it never takes typed text away (``KeepsTyping``).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Label, Static

from dcode.mcp.config import ConfigFile, ProjectEnv, ServerConfig
from dcode.mcp.plan import notes
from dcode.terminal_text import safe_text
from dcode.trust import TrustState
from dcode.tui.screens.trust import TrustDialog, dialog_css

_TARGET_CHARS = 200


def server_line(server: ServerConfig, readable: ProjectEnv) -> Content:
    """A server as the project's file names it: drawn safe, since what it runs is the
    repository's to write and a hidden character could make it read as something else."""
    target = safe_text(server.target)
    if len(target) > _TARGET_CHARS:
        target = target[: _TARGET_CHARS - 1] + "…"
    kind = "runs" if server.transport.value == "stdio" else f"connects ({server.transport.value}) to"
    line = Content.assemble(("  " + safe_text(server.name), "bold"), f" {kind} ", (target, "$accent"))
    said = notes(server, readable)
    if not said:
        return line
    return Content("\n").join([line, *(Content.styled(f"      {safe_text(note.text)}", "$warning" if note.warning else "") for note in said)])


class McpTrustScreen(TrustDialog):
    """Dismisses True for "Start these servers", False for "Not now"."""

    DEFAULT_CSS = dialog_css("McpTrustScreen")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "yes", "Start these servers"),
        Binding("escape", "not_now", "Not now"),
    ]

    def __init__(self, file: ConfigFile, state: TrustState, readable: ProjectEnv | None = None) -> None:
        super().__init__()
        self.file = file
        self.state = state
        self.readable = readable or ProjectEnv()

    def compose(self) -> ComposeResult:
        changed = self.state is TrustState.CHANGED
        with Vertical(id="trust-dialog"):
            yield Label(
                "This project's MCP servers changed since you approved them" if changed else "Start this project's MCP servers?",
                id="trust-title",
            )
            with VerticalScroll(id="trust-body"):
                yield Static(
                    Content.assemble(
                        (safe_text(str(self.file.path)), "bold"),
                        " names programs to run and servers to reach, whose tools the model could then call:",
                    ),
                    id="trust-intro",
                )
                yield Static(Content("\n").join(server_line(s, self.readable) for s in self.file.servers), id="trust-settings")
                yield Static(
                    "Start them only if you know where the repository comes from. dcode remembers the choice"
                    " and asks again if the file changes.",
                    id="trust-note",
                )
            with Vertical(id="trust-footer"), Horizontal(id="trust-buttons"):
                yield Button("Start these servers  ctrl+t", id="trust-yes", variant="warning")
                yield Button("Not now  esc", id="trust-no")
