"""Asked once at start when the project's config has settings dcode would otherwise ignore.

The modal lists each of those settings with its value and what it would change, and offers
"Trust this project" (recorded in ``$DCODE_HOME``, asked again when the file changes) or "Not
now" (ignored for this run, asked next time). Like the first-run screen it never takes typed
text away (``KeepsTyping``): Ctrl+T trusts, Esc is "Not now", and what was typed meanwhile goes
back to the prompt.
"""

from __future__ import annotations

import json
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from dcode.config import IgnoredSetting, Settings
from dcode.terminal_text import safe_text
from dcode.trust import AGENT_DIRS, TrustState
from dcode.tui.screens.keeps_typing import KeepsTyping

_VALUE_CHARS = 80


def setting_line(item: IgnoredSetting) -> Content:
    """``key = value`` as the file spells it (drawn safe: the file is the repository's), and
    on the next line what it would change."""
    value = safe_text(json.dumps(item.value, ensure_ascii=False, default=str))
    if len(value) > _VALUE_CHARS:
        value = value[: _VALUE_CHARS - 1] + "…"
    return Content.assemble(("  " + safe_text(item.key), "bold"), " = ", (value, "$accent"), "\n", ("      " + item.reason, "$text-muted"))


def dialog_css(screen: str) -> str:
    """The trust dialogs' look (this one's, and the project's MCP servers' in ``mcp_trust``),
    for the screen class named ``screen``; both use the same ids."""
    return _DIALOG_CSS.replace("{screen}", screen)


_DIALOG_CSS = """
    {screen} {
        align: center middle;
    }
    {screen} > #trust-dialog {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        border: round $warning;
        background: $surface;
        padding: 0 2;
    }
    #trust-title {
        text-style: bold;
        color: $warning;
        margin: 1 0 0 0;
    }
    #trust-body {
        height: auto;
        max-height: 100%;
        margin: 1 0 0 0;
    }
    #trust-settings {
        margin: 1 0;
    }
    #trust-footer {
        dock: bottom;
        height: auto;
    }
    #trust-buttons {
        height: auto;
        margin: 1 0;
    }
    #trust-buttons > Button {
        margin: 0 1 0 0;
    }
"""


class TrustDialog(KeepsTyping, ModalScreen[bool]):
    """A yes-or-not-now question about a project's files: its yes button is ``#trust-yes``
    (Ctrl+T), its "Not now" ``#trust-no`` (Esc); dismisses True for yes."""

    AUTO_FOCUS = "#trust-body"

    @on(Button.Pressed, "#trust-yes")
    def action_yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#trust-no")
    def action_not_now(self) -> None:
        self.dismiss(False)

    def on_key(self, event: events.Key) -> None:
        self.keep_typed(event)


class TrustScreen(TrustDialog):
    """Dismisses True for "Trust this project", False for "Not now"."""

    DEFAULT_CSS = dialog_css("TrustScreen")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "yes", "Trust this project"),
        Binding("escape", "not_now", "Not now"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def compose(self) -> ComposeResult:
        settings = self.settings
        config = settings.project_config.relative_to(settings.workspace)
        changed = settings.trust is TrustState.CHANGED
        with Vertical(id="trust-dialog"):
            yield Label(
                "This project's settings changed since you trusted it" if changed else "Trust this project's settings?",
                id="trust-title",
            )
            with VerticalScroll(id="trust-body"):
                yield Static(
                    Content.assemble(
                        (safe_text(str(config)), "bold"),
                        f" in {safe_text(str(settings.workspace))} asks for settings that could let it do more than"
                        " your own choices allow, or send your requests and keys elsewhere."
                        " Until you trust the project, dcode leaves them out:",
                    ),
                    id="trust-intro",
                )
                yield Static(Content("\n").join(setting_line(item) for item in settings.ignored), id="trust-settings")
                agents = [name for name in AGENT_DIRS if (settings.workspace / name).is_dir()]
                also = f" Trusting it also lets the agents in {' and '.join(agents)} choose their models." if agents else ""
                yield Static(
                    f"Trust it only if you know where the repository comes from.{also} dcode remembers the choice"
                    " and asks again if these files change; `dcode trust --revoke` takes it back.",
                    id="trust-note",
                )
            with Vertical(id="trust-footer"):
                with Horizontal(id="trust-buttons"):
                    yield Button("Trust this project  ctrl+t", id="trust-yes", variant="warning")
                    yield Button("Not now  esc", id="trust-no")
