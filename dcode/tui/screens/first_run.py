"""Shown when no model can be reached: says exactly what to set, and can test the connection.

The screen never takes typed text away from the user (``KeepsTyping``): the explicit keys are
Ctrl+T (test), Ctrl+R (retry) and Esc (close), and what is typed while it is open is shown as
kept for the prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static
from textual.worker import Worker, WorkerState

from dcode.settings.config import Settings
from dcode.settings.presets import PROVIDERS
from dcode.terminal_text import safe_text
from dcode.tui.screens.keeps_typing import KeepsTyping

ConnectionCheck = Callable[[], tuple[bool, str]]
_CHECK_GROUP = "first-run-check"

# Environment variable holding each hosted provider's key, straight from the model presets.
KEY_ENVIRONMENT = {p.name: p.key_env for p in PROVIDERS.values() if p.key_required and p.key_env}
_LOCAL_LABELS = {
    "ollama": ("Ollama", "qwen3-coder"),
    "vllm": ("vLLM", "MODEL"),
    "lmstudio": ("LM Studio", "MODEL"),
}
LOCAL_SERVERS = tuple(
    (label, p.name, p.base_url, example)
    for p in PROVIDERS.values()
    if p.local
    for label, example in [_LOCAL_LABELS.get(p.name, (p.name, "MODEL"))]
)


def setup_steps(settings: Settings) -> list[Content]:
    """The concrete things to set, for the model that is configured now."""
    provider, _, _name = settings.model.partition(":")
    override = settings.providers.get(provider)
    key_env = (override.api_key_env if override else None) or KEY_ENVIRONMENT.get(provider)
    steps: list[Content] = []
    code = "$accent"
    if key_env:
        steps.append(
            Content.assemble(
                f"Set the API key for {provider} in your shell, then restart dcode:\n    ",
                (f"export {key_env}=...", code),
            )
        )
    if provider != "deepseek":
        steps.append(
            Content.assemble(
                "For DeepSeek models, use ",
                ("DEEPSEEK_API_KEY", code),
                " and pick the model with ",
                ("-m deepseek:deepseek-chat", code),
                ".",
            )
        )
    steps.append(
        Content.assemble(
            "Or set the model once in ",
            (str(settings.user_config), code),
            ", then Retry:\n    ",
            ('model = "deepseek:deepseek-chat"', code),
        )
    )
    local = [
        Content.assemble(
            "    ", (f"dcode --base-url {url} -m {prefix}:{model}", code), f"  ({label})"
        )
        for label, prefix, url, model in LOCAL_SERVERS
    ]
    steps.append(
        Content("Or use a local server (no key needed):\n").join(
            [Content(""), Content("\n").join(local)]
        )
    )
    if settings.base_url:
        steps.append(
            Content.assemble("The base URL in use now is ", (settings.base_url, code), ".")
        )
    return steps


class FirstRunScreen(KeepsTyping, ModalScreen[bool]):
    """Dismisses True for "Retry" (the app should re-check), False for Esc / Close."""

    AUTO_FOCUS = "#first-run-body"

    DEFAULT_CSS = """
    FirstRunScreen {
        align: center middle;
    }
    FirstRunScreen > #first-run-dialog {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        border: round $warning;
        background: $surface;
        padding: 0 2;
    }
    #first-run-title {
        text-style: bold;
        color: $warning;
        margin: 1 0 0 0;
    }
    #first-run-problem {
        margin: 1 0;
    }
    #first-run-body {
        height: auto; max-height: 100%;
    }
    #first-run-body > .first-run-step {
        margin: 0 0 1 0;
    }
    #first-run-result {
        height: auto;
        color: $text-muted;
        &.-ok {
            color: $success;
        }
        &.-failed {
            color: $error;
        }
    }
    #first-run-typed {
        color: $text-muted;
        display: none;
        &.-shown {
            display: block;
        }
    }
    #first-run-footer {
        dock: bottom;
        height: auto;
    }
    #first-run-buttons {
        height: auto;
        margin: 1 0;
    }
    #first-run-buttons > Button {
        margin: 0 1 0 0;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "test", "Test connection"),
        Binding("ctrl+r", "retry", "Retry"),
        Binding("escape", "close", "Close"),
    ]

    def __init__(
        self, problem: str, settings: Settings, check: ConnectionCheck | None = None
    ) -> None:
        super().__init__()
        self.problem = problem
        self.settings = settings
        self.check = check
        self.last_result: tuple[bool, str] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="first-run-dialog"):
            yield Label("dcode can't reach a model yet", id="first-run-title")
            yield Static(
                Content.assemble(
                    (safe_text(self.problem), "bold"),
                    "\n",
                    f"Model: {safe_text(self.settings.model)}",
                ),
                id="first-run-problem",
            )
            with VerticalScroll(id="first-run-body"):
                for step in setup_steps(self.settings):
                    yield Static(step, classes="first-run-step")
            with Vertical(id="first-run-footer"):
                yield Static("", id="first-run-result")
                yield Static("", id="first-run-typed")
                with Horizontal(id="first-run-buttons"):
                    if self.check is not None:
                        yield Button(
                            "Test connection  ctrl+t", id="first-run-test", variant="primary"
                        )
                    yield Button("Retry  ctrl+r", id="first-run-retry")
                    yield Button("Close  esc", id="first-run-close")

    # --- actions

    @on(Button.Pressed, "#first-run-test")
    def action_test(self) -> None:
        if self.check is None:
            return
        self._show_result(None, "Testing the connection…")
        self.query_one("#first-run-test", Button).disabled = True
        self._run_check()

    @work(thread=True, exclusive=True, group=_CHECK_GROUP, exit_on_error=False)
    def _run_check(self) -> tuple[bool, str]:
        assert self.check is not None
        try:
            return self.check()
        except Exception as exc:  # noqa: BLE001 - the check is an injected port; report, never crash
            return False, f"{type(exc).__name__}: {exc}"

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != _CHECK_GROUP or not event.worker.is_finished:
            return
        event.stop()
        if event.state is WorkerState.SUCCESS and event.worker.result is not None:
            ok, message = event.worker.result
            self._check_done(bool(ok), str(message))
        else:
            self._check_done(False, "The check did not finish.")

    def _check_done(self, ok: bool, message: str) -> None:
        self.last_result = (ok, message)
        self._show_result(ok, message)
        if self.is_attached:
            self.query_one("#first-run-test", Button).disabled = False

    def _show_result(self, ok: bool | None, message: str) -> None:
        if not self.is_attached:
            return
        result = self.query_one("#first-run-result", Static)
        message = safe_text(message)  # a server's words
        line = message.strip().splitlines()[0] if message.strip() else ""
        mark = {True: "✓ ", False: "✗ ", None: ""}[ok]
        result.update(Content(mark + line))
        result.set_class(ok is True, "-ok")
        result.set_class(ok is False, "-failed")

    @on(Button.Pressed, "#first-run-retry")
    def action_retry(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#first-run-close")
    def action_close(self) -> None:
        self.dismiss(False)

    # --- keep what the user types

    def on_key(self, event: events.Key) -> None:
        if not self.keep_typed(event):
            return
        event.stop()
        typed = self.query_one("#first-run-typed", Static)
        typed.update(Content.assemble("Kept for your prompt: ", (self.typed[-60:], "$foreground")))
        typed.set_class(bool(self.typed), "-shown")
