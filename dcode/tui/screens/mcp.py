"""``/mcp``: the MCP servers with their state, transport, tools (with descriptions) and last
error; ``r`` reconnects the highlighted server, ``d`` disables it. Changes reach the model from
the next turn, as a server that connects late does. The screen follows the servers' states
while it is open.
"""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from dcode.agent.tools.spec import READ_MCP_RESOURCE
from dcode.mcp.manager import McpManager, ServerStatus
from dcode.mcp.state import LinkState
from dcode.terminal_text import safe_text

_STYLE = {
    LinkState.CONNECTED: "$text-success",
    LinkState.CONNECTING: "$text-muted",
    LinkState.FAILED: "$text-error",
    LinkState.NEEDS_LOGIN: "$text-warning",
    LinkState.DISABLED: "$text-muted",
}


def server_row(server: ServerStatus) -> Content:
    return Content.assemble(
        (safe_text(server.name), "bold"),
        "  ",
        (server.state.value, _STYLE[server.state]),
        "  ",
        (server.transport.value, "$text-muted"),
    )


def server_detail(server: ServerStatus) -> Content:
    """What a server (or a project's .mcp.json) said of itself, drawn safe: its target, its
    last error, its tools' names and descriptions and its resources."""
    lines = [Content.assemble(("target ", "$text-muted"), safe_text(server.target))]
    if server.error:
        lines.append(
            Content.assemble(
                ("last error ", "$text-muted"), (safe_text(server.error), "$text-error")
            )
        )
    if server.tools:
        lines.append(Content.styled(f"{len(server.tools)} tools", "$text-muted"))
        lines += [
            Content.assemble(
                ("  " + safe_text(name), "$accent"),
                ("  " + " ".join(safe_text(text).split())[:160], ""),
            )
            for name, text in zip(server.tools, server.descriptions, strict=False)
        ]
    elif server.state is LinkState.CONNECTED:
        lines.append(Content.styled("no tools", "$text-muted"))
    if server.task_only:
        lines.append(
            Content.styled(
                f"not offered (the server runs them only as tasks): {safe_text(', '.join(server.task_only))}",
                "$text-muted",
            )
        )
    if server.resources:
        lines.append(
            Content.styled(
                f"{len(server.resources)} resource{'s' if len(server.resources) != 1 else ''} (the model reads them with {READ_MCP_RESOURCE.name})",
                "$text-muted",
            )
        )
        lines += [
            Content.assemble(
                ("  " + safe_text(r.uri), "$accent"),
                ("  " + " ".join(safe_text(f"{r.name} {r.description}").split())[:160], ""),
            )
            for r in server.resources
        ]
    if server.prompts:
        lines.append(
            Content.styled(
                f"{len(server.prompts)} prompt{'s' if len(server.prompts) != 1 else ''}, as slash commands",
                "$text-muted",
            )
        )
        lines += [Content.styled("  /" + name, "$accent") for name in server.prompts]
    return Content("\n").join(lines)


class McpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    McpScreen {
        align: center middle;
    }
    McpScreen > #mcp-dialog {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 85%;
        border: round $primary;
        background: $surface;
        padding: 0 2;
    }
    #mcp-heading {
        text-style: bold;
        color: $primary;
        margin: 1 0;
    }
    #mcp-servers {
        height: auto;
        max-height: 10;
    }
    #mcp-detail {
        height: auto;
        max-height: 20;
        margin: 1 0 0 0;
    }
    #mcp-hint {
        color: $text-muted;
        margin: 1 0;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
        Binding("r", "reconnect", "Reconnect"),
        Binding("d", "disable", "Disable"),
    ]

    def __init__(self, manager: McpManager) -> None:
        super().__init__()
        self.manager = manager
        self._shown: tuple[ServerStatus, ...] = ()

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-dialog"):
            yield Label("MCP servers", id="mcp-heading")
            yield OptionList(id="mcp-servers")
            with VerticalScroll(id="mcp-detail"):
                yield Static("", id="mcp-detail-text")
            yield Label(
                "r reconnect · d disable · Esc or q to close · dcode mcp list|add|remove|get edits the files",
                id="mcp-hint",
            )

    def on_mount(self) -> None:
        self._refresh()
        self.set_interval(0.5, self._refresh)

    @property
    def servers(self) -> tuple[ServerStatus, ...]:
        return self.manager.snapshot().servers

    def _refresh(self) -> None:
        servers = self.servers
        if servers != self._shown:
            self._shown = servers
            options = self.query_one("#mcp-servers", OptionList)
            highlighted = options.highlighted
            options.clear_options()
            if servers:
                options.add_options([Option(server_row(s), id=s.name) for s in servers])
                options.highlighted = min(highlighted or 0, len(servers) - 1)
            else:
                options.add_option(
                    Option("No MCP servers: add one with `dcode mcp add`", disabled=True)
                )
        self._show_detail()

    def _selected(self) -> ServerStatus | None:
        index = self.query_one("#mcp-servers", OptionList).highlighted
        return self._shown[index] if index is not None and index < len(self._shown) else None

    def _show_detail(self) -> None:
        server = self._selected()
        self.query_one("#mcp-detail-text", Static).update(server_detail(server) if server else "")

    def on_option_list_option_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self._show_detail()

    @work(group="mcp-action", exclusive=True)
    async def action_reconnect(self) -> None:
        if (server := self._selected()) is not None:
            await self.manager.reconnect(server.name)
            self._refresh()

    @work(group="mcp-action", exclusive=True)
    async def action_disable(self) -> None:
        if (server := self._selected()) is not None:
            await self.manager.disable(server.name)
            self._refresh()

    def action_close(self) -> None:
        self.dismiss(None)
