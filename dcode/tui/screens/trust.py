"""The one trust question, asked at start when the project asks for more than your settings allow.

It lists everything trusting the project would enable, by section: the settings in its
``.dcode/config.toml`` (each with its value and what it would change), its allow rules, its
hooks (each command whole, with its file), its ``.mcp.json`` servers (each with the program it runs or the URL it reaches, and every variable it reads),
and its agents' models. It is answered as an approval is: ``y`` trusts the project (each part
recorded in ``$DCODE_HOME`` for exactly the content shown, asked again when it changes), ``n``
or Esc leaves it all out for this run (asked next time).

Like the first-run screen it never takes typed text away (``KeepsTyping``): it may open while
someone is typing, so printable keys typed in a burst that began before it opened are kept for
the prompt, and answer nothing; once the typing has paused (``TYPING_GRACE``), ``y`` and ``n``
answer. Enter on the text presses nothing.
"""

from __future__ import annotations

import json
import time
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from dcode.settings.config import IgnoredSetting
from dcode.settings.hook_sources import HookCommand
from dcode.settings.project_gate import RULES_KEY, is_hook_key
from dcode.terminal_text import safe_text
from dcode.tui.screens.keeps_typing import KeepsTyping
from dcode.tui.trust_request import TrustRequest

_VALUE_CHARS = 80
TYPING_GRACE = 0.4
"""A key this soon after the one before belongs to the typing, not to the question."""


def setting_line(item: IgnoredSetting) -> Content:
    """``key = value`` as the file spells it (drawn safe: the file is the repository's), and
    on the next line what it would change."""
    value = safe_text(json.dumps(item.value, ensure_ascii=False, default=str))
    if len(value) > _VALUE_CHARS:
        value = value[: _VALUE_CHARS - 1] + "…"
    return Content.assemble(
        ("  " + safe_text(item.key), "bold"),
        " = ",
        (value, "$accent"),
        "\n",
        ("      " + item.reason, "$text-muted"),
    )


def hook_line(hook: HookCommand) -> Content:
    """A hook's event and matcher, its whole command (a repository could hide what it runs
    past a cut), and the file it is in."""
    matcher = f" [{hook.matcher}]" if hook.matcher else ""
    return Content.assemble(
        ("  " + safe_text(hook.event + matcher), "bold"),
        "  ",
        (safe_text(hook.command), "$accent"),
        "\n",
        ("      in " + safe_text(hook.source), "$text-muted"),
    )


def sections(request: TrustRequest) -> list[tuple[str, Content]]:
    """What trusting the project enables, as (heading, lines): settings, permission rules,
    hooks, MCP servers, agents."""
    settings = request.settings
    found: list[tuple[str, Content]] = []
    if ignored := [
        item for item in settings.ignored if item.key != RULES_KEY and not is_hook_key(item.key)
    ]:
        config = safe_text(str(settings.project_config.relative_to(settings.workspace)))
        found.append(
            (f"Settings in {config}", Content("\n").join(setting_line(item) for item in ignored))
        )
    if settings.waiting_rules:
        lines = [
            Content.assemble(
                ("  " + safe_text(rule.text), "bold"),
                ("  " + safe_text(rule.source), "$text-muted"),
            )
            for rule in settings.waiting_rules
        ]
        found.append(
            ("Permission rules that let calls run without asking", Content("\n").join(lines))
        )
    if settings.skipped_hooks:
        lines = [hook_line(hook) for hook in settings.skipped_hooks]
        found.append(("Hooks: commands that would run on this machine", Content("\n").join(lines)))
    if request.mcp is not None and request.mcp.awaiting is not None:
        from dcode.tui.screens.mcp_trust import server_line

        file, readable = request.mcp.awaiting, request.mcp.readable
        found.append(
            (
                f"MCP servers in {safe_text(file.path.name)}, whose tools the model could call",
                Content("\n").join(server_line(s, readable) for s in file.servers),
            )
        )
    if request.agents:
        lines = [
            Content.assemble(
                ("  " + safe_text(agent.name), "bold"),
                " runs on ",
                (safe_text(agent.model or ""), "$accent"),
                ("  " + _shown_path(request, agent.path), "$text-muted"),
            )
            for agent in request.agents
        ]
        found.append(
            (
                "Agents that choose their own model (until then they run on yours)",
                Content("\n").join(lines),
            )
        )
    return found


def _shown_path(request: TrustRequest, path: str | None) -> str:
    from pathlib import Path

    if not path:
        return ""
    try:
        return safe_text(str(Path(path).relative_to(request.settings.workspace)))
    except ValueError:
        return safe_text(path)


_DIALOG_CSS = """
    ProjectTrustScreen {
        align: center middle;
    }
    ProjectTrustScreen > #trust-dialog {
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
    #trust-body > .trust-heading {
        text-style: bold;
        margin: 1 0 0 0;
    }
    #trust-note {
        margin: 1 0 0 0;
    }
    #trust-footer {
        dock: bottom;
        height: auto;
    }
    #trust-keys {
        color: $text-muted;
        margin: 1 0 0 0;
    }
    #trust-buttons {
        height: auto;
        margin: 1 0;
    }
    #trust-buttons > Button {
        margin: 0 1 0 0;
    }
"""


class ProjectTrustScreen(KeepsTyping, ModalScreen[bool]):
    """Dismisses True for "trust", False for "not now"."""

    AUTO_FOCUS = "#trust-body"
    DEFAULT_CSS = _DIALOG_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "yes", "Trust this project", show=False),
        Binding("n", "not_now", "Not now", show=False),
        Binding("escape", "not_now", "Not now", show=False),
    ]

    def __init__(self, request: TrustRequest, *, typed_at: float = -10.0) -> None:
        """``typed_at``: when the user last typed (``time.monotonic``), so that a key of that
        same burst of typing does not answer."""
        super().__init__()
        self.request = request
        self.typed_at = typed_at

    def compose(self) -> ComposeResult:
        request = self.request
        workspace = safe_text(str(request.settings.workspace))
        with Vertical(id="trust-dialog"):
            yield Label(
                "This project's files changed since you trusted them"
                if request.changed
                else "Trust this project?",
                id="trust-title",
            )
            with VerticalScroll(id="trust-body"):
                yield Static(
                    Content.assemble(
                        (workspace, "bold"),
                        " asks for more than your own settings allow: to change what dcode may do or where your requests"
                        " and keys go, or to run programs. Until you trust it, dcode leaves all of this out:",
                    ),
                    id="trust-intro",
                )
                for heading, lines in sections(request):
                    yield Static(heading, classes="trust-heading", markup=False)
                    yield Static(lines, classes="trust-lines")
                yield Static(
                    "Trust it only if you know where the repository comes from. dcode remembers the answer and asks"
                    " again if these files change; `dcode trust --revoke` takes the settings back.",
                    id="trust-note",
                    markup=False,
                )
            with Vertical(id="trust-footer"):
                yield Static(
                    Content.assemble(
                        ("y", "bold $text-success"),
                        " trust this project   ",
                        ("n", "bold $text-error"),
                        " not now   ",
                        ("esc", "bold"),
                        " not now",
                    ),
                    id="trust-keys",
                )
                with Horizontal(id="trust-buttons"):
                    yield Button("Trust this project  y", id="trust-yes", variant="warning")
                    yield Button("Not now  n", id="trust-no")

    def _typing(self) -> bool:
        return time.monotonic() - self.typed_at < TYPING_GRACE

    def on_key(self, event: events.Key) -> None:
        if not (event.is_printable and event.character) and event.key != "backspace":
            return  # Esc, Tab, Enter: bindings and buttons as usual
        if event.character in ("y", "n") and not self._typing():
            return  # the answer
        if self.keep_typed(event):
            self.typed_at = time.monotonic()
            event.stop()
            event.prevent_default()

    @on(Button.Pressed, "#trust-yes")
    def action_yes(self) -> None:
        if not self._typing():
            self.dismiss(True)

    @on(Button.Pressed, "#trust-no")
    def action_not_now(self) -> None:
        self.dismiss(False)
