"""``/agents``: the agents a ``task`` call may name, as ``dcode agents list`` shows them."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from dcode.agent.subagents.definitions import AgentCatalog
from dcode.cli.agents import agent_facts, split_problems
from dcode.terminal_text import safe_text
from dcode.tui.screens.help import HelpTable


class AgentsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    AgentsScreen {
        align: center middle;
    }
    AgentsScreen > #agents-dialog {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 85%;
        border: round $primary;
        background: $surface;
        padding: 0 2;
    }
    AgentsScreen .agents-heading {
        text-style: bold;
        color: $primary;
        margin: 1 0 0 0;
    }
    AgentsScreen .agent-name {
        text-style: bold;
        color: $accent;
        margin: 1 0 0 0;
    }
    AgentsScreen .agent-description {
        margin: 0 0 0 2;
    }
    AgentsScreen .agent-path {
        color: $accent;
    }
    AgentsScreen HelpTable {
        margin: 0 0 0 2;
    }
    AgentsScreen #agents-hint {
        color: $text-muted;
        margin: 1 0 0 0;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
    ]

    def __init__(self, catalog: AgentCatalog) -> None:
        super().__init__()
        self.catalog = catalog

    def compose(self) -> ComposeResult:
        left_out, ignored = split_problems(self.catalog)
        with VerticalScroll(id="agents-dialog"):
            yield Label("Agents", classes="agents-heading")
            for agent in self.catalog.agents.values():
                yield Static(
                    safe_text(agent.name), classes="agent-name", markup=False
                )  # a project's file says these
                yield Static(
                    safe_text(agent.description), classes="agent-description", markup=False
                )
                yield HelpTable(agent_facts(agent))
            for title, problems in (
                ("Ignored in the agents above", ignored),
                ("Not loaded", left_out),
            ):
                if problems:
                    yield Label(title, classes="agents-heading")
                for path, reason in problems:  # a path is long: the reason goes under it
                    yield Static(safe_text(path), classes="agent-path", markup=False)
                    yield Static(safe_text(reason), classes="agent-description", markup=False)
            yield Label("dcode agents list shows the same · Esc or q to close", id="agents-hint")

    def action_close(self) -> None:
        self.dismiss(None)
